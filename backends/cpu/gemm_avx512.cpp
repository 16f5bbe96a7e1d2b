// The AVX-512 instantiation of the GEMM microkernel (gemm_impl.h; gemm.h): a 14 x 32 tile,
// 28 accumulators, two B vectors and one A broadcast in flight (31 of 32 zmm). Measured
// against 12x32, 10x32, 8x48, 7x48, 6x64 and 4x64 on Sapphire Rapids: 14x32, 12x32 and
// 7x48 lead within noise; 14x32 has the fewest B loads per FMA. Narrow panels (at most 16
// valid columns) run the one-vector kernel.
#include "cpu/gemm_impl.h"
#include "cpu/vec_avx512.h"

namespace longrun::cpu::gemm {
namespace {
struct GemmTileAvx512 {
  static constexpr int kMr = 14, kUnrollK = 2, kMcTiles = 4;
  static constexpr bool kSplitNarrow = true;
  static constexpr MacroKernelFn kMacro = &gemm_macro_f32_avx512;
  static constexpr EpilogueFn kEpilogue = &gemm_epilogue_f32_avx512;
};
using Kernels = GemmKernels<avx512::Vec, GemmTileAvx512>;
}  // namespace

void gemm_macro_f32_avx512(const MacroArgs& g) { Kernels::macro(g); }
const GemmIsaKernels& gemm_kernels_avx512() { return Kernels::isa_kernels(); }

}  // namespace longrun::cpu::gemm
