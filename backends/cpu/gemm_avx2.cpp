// The AVX2+FMA instantiation of the GEMM microkernel (gemm_impl.h; gemm.h): a 6x16 tile.
#include "cpu/gemm_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu::gemm {
namespace {
struct GemmTileAvx2 {
  // 6x16: 12 accumulators, two B vectors and one A broadcast in flight (15 of the 16 ymm).
  static constexpr int kMr = 6;
  static constexpr bool kSplitNarrow = false;
  static constexpr int kUnrollK = 4;
  static constexpr EpilogueFn kEpilogue = &gemm_epilogue_f32_avx2;
};
using Kernels = GemmKernels<avx2::Vec, GemmTileAvx2>;
}  // namespace

void gemm_macro_f32_avx2_6x16(const MacroArgs& g) { Kernels::macro(g); }

const GemmIsaKernels& gemm_kernels_avx2() {
  static const GemmIsaKernels k{Kernels::kMr,          Kernels::kNr,    512,
                                8 * Kernels::kMr,      pack_panel_avx2, gemm_macro_f32_avx2_6x16,
                                gemm_epilogue_f32_avx2};
  return k;
}

}  // namespace longrun::cpu::gemm
