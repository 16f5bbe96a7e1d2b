// The AVX2+FMA instantiation of the GEMM microkernel (gemm_impl.h; gemm.h): a 6x16 tile,
// 12 accumulators, two B vectors and one A broadcast in flight (15 of the 16 ymm).
#include "cpu/gemm_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu::gemm {
namespace {
struct GemmTileAvx2 {
  static constexpr int kMr = 6, kUnrollK = 4, kMcTiles = 8;
  static constexpr bool kSplitNarrow = false;
  // = kMr: for Q·Kᵀ (K = 64) on Zen 3, 4- and 3-row tiles took 1-28 % longer (alternating runs).
  static constexpr int kShortKRows = 6;
  static constexpr int kWideRows = 0, kWideNv = 0;  // no wide tile: 16 ymm hold no 4-vector tile
  static constexpr MacroKernelFn kMacroWide = nullptr;
  static constexpr MacroKernelFn kMacro = &gemm_macro_f32_avx2_6x16;
  static constexpr EpilogueFn kEpilogue = &gemm_epilogue_f32_avx2;
};
using Kernels = GemmKernels<avx2::Vec, GemmTileAvx2>;
}  // namespace

void gemm_macro_f32_avx2_6x16(const MacroArgs& g) { Kernels::macro(g); }
const GemmIsaKernels& gemm_kernels_avx2() { return Kernels::isa_kernels(); }

}  // namespace longrun::cpu::gemm
