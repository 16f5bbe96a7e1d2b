// The AVX2+FMA instantiation of the GEMM microkernel (gemm_impl.h; gemm.h): a 6x16 tile,
// 12 accumulators, two B vectors and one A broadcast in flight (15 of the 16 ymm). Its
// 16-column panels keep every row of a tile inside one 64-byte line of Y, so streamed stores
// write whole lines (a 24-column panel would split lines between two tiles).
#include "cpu/gemm_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu::gemm {
namespace {
struct GemmTileAvx2 {
  // kUnrollK 4: four K steps per loop iteration amortise the loop's own instructions over 48
  // FMAs. kMcTiles 8: an M block of 48 rows, whose packed A (48 x 512 floats, 96 KiB) stays
  // in L2 while the B micro-panels stream through L1.
  static constexpr int kMr = 6, kUnrollK = 4, kMcTiles = 8;
  static constexpr bool kSplitNarrow = false;
  // Q·Kᵀ (A in place, K <= 64) runs gemm_impl.h's short_k_tiles, kShortKRows = kMr rows
  // per tile (fewer rows would load each B vector for fewer FMAs): the whole K fits one
  // step, so the loop skips the per-tile B prefetch.
  static constexpr bool kShortKLoop = true;
  static constexpr bool kShortKFetchAndStreamY = false;  // plain stores, no fetch (gemm_impl.h)
  // B prefetched by the first tile of each panel only: the later tiles of the panel find it
  // in L1, and the prefetch instructions would take issue slots from the FMAs.
  static constexpr bool kFetchBOnce = true;
  static constexpr int kShortKRows = 6;
  static constexpr int kWideRows = 0, kWideNv = 0;  // no wide tile: 16 ymm hold no 4-vector tile
  static constexpr int64_t kWideKc = 0;
  static constexpr MacroKernelFn kMacroWide = nullptr;
  static constexpr MacroKernelFn kMacro = &gemm_macro_f32_avx2_6x16;
  static constexpr EpilogueFn kEpilogue = &gemm_epilogue_f32_avx2;
};
using Kernels = GemmKernels<avx2::Vec, GemmTileAvx2>;
}  // namespace

void gemm_macro_f32_avx2_6x16(const MacroArgs& g) { Kernels::macro(g); }
const GemmIsaKernels& gemm_kernels_avx2() { return Kernels::isa_kernels(); }

}  // namespace longrun::cpu::gemm
