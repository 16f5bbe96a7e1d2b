// The AVX-512 instantiation of the GEMM microkernel (gemm_impl.h; gemm.h): a 14 x 32 tile,
// 28 accumulators, two B vectors and one A broadcast in flight (31 of 32 zmm); of the tiles
// that fit the register file it has the fewest B loads per FMA. Narrow panels (at most 16
// valid columns) run the one-vector kernel. Attention's P·V (A = P and B = V read in place,
// N = 64) runs 6 x 64 tiles instead (kWideRows, kWideNv): a 64-column V row is one tile
// wide, so each P element is broadcast once per row of the tile and V's block is reused
// across the M block's tiles.
#include "cpu/gemm_impl.h"
#include "cpu/vec_avx512.h"

namespace longrun::cpu::gemm {
namespace {
struct GemmTileAvx512 {
  // kUnrollK 2: two K steps (56 FMAs) per loop iteration already amortise the loop's own
  // instructions. kMcTiles 4: an M block of 56 rows, whose packed A (56 x 512 floats,
  // 112 KiB) stays in L2 while the B micro-panels stream through L1.
  static constexpr int kMr = 14, kUnrollK = 2, kMcTiles = 4;
  static constexpr bool kSplitNarrow = true;
  // Q·Kᵀ (A in place, K <= 64) through gemm_impl.h's short_k_tiles, which here fetches Y's
  // lines ahead and streams Y where the GEMM streams it, as the per-tile path does: a
  // 32-column tile row covers two whole lines of Y, so its streamed stores fill
  // write-combining buffers completely.
  static constexpr bool kShortKLoop = true;
  static constexpr bool kShortKFetchAndStreamY = true;
  // Every tile prefetches its B panel (gemm_impl.h): a 14-row tile spends 14 FMAs per B
  // line, which leaves room for the prefetches, so fetching once per panel (AVX2's choice)
  // gains nothing here.
  static constexpr bool kFetchBOnce = false;
  static constexpr int kShortKRows = 7;             // direct A, K <= 64 (gemm_impl.h, macro)
  static constexpr int kWideRows = 6, kWideNv = 4;  // 24 accumulators, 4 B vectors, 1 broadcast
  // K blocks of 64 for the wide tile where all of K fits one ordinary block (gemm.cpp,
  // wide_short_k): the 64 x 64 block of V (16 KiB, half of a 32 KiB L1d) stays in L1 across
  // an M block's tiles, where one block of 512 (128 KiB) would stream it from L2 for every
  // 6 rows. Longer K keeps blocks of kc_max, so each row of P (beyond the L2 from N = 1024)
  // is read 2 KiB at a time, a run long enough for the hardware prefetchers to follow.
  static constexpr int64_t kWideKc = 64;
  static constexpr MacroKernelFn kMacroWide = &gemm_macro_wide_f32_avx512;
  static constexpr MacroKernelFn kMacro = &gemm_macro_f32_avx512;
  static constexpr EpilogueFn kEpilogue = &gemm_epilogue_f32_avx512;
};
using Kernels = GemmKernels<avx512::Vec, GemmTileAvx512>;
}  // namespace

void gemm_macro_f32_avx512(const MacroArgs& g) { Kernels::macro(g); }
void gemm_macro_wide_f32_avx512(const MacroArgs& g) { Kernels::macro_wide(g); }
const GemmIsaKernels& gemm_kernels_avx512() { return Kernels::isa_kernels(); }

}  // namespace longrun::cpu::gemm
