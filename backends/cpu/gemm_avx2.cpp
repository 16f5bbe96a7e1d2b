// The AVX2+FMA instantiation of the GEMM microkernel (gemm_impl.h; gemm.h): a 6x16 tile,
// 12 accumulators, two B vectors and one A broadcast in flight (15 of the 16 ymm).
// A 4x24 tile (12 accumulators, three B vectors; oneDNN's AVX2 shape) ran 8-18 % faster in
// an L1-resident loop on Zen 3 (session 17), but in the GEMM (alternating runs in one
// process, 1 thread) the projections took 0.94-1.01 of the 6x16 time (x[4096,2048]·Wᵀ 0.83
// in one run, 0.91-1.11 with kc 256 / 384 or A packed) and Q·Kᵀ 1.08 (N = 1024) and 1.48
// (N = 4096): 24-column panels split Y's 64-byte lines between two tiles, so streamed stores
// no longer write whole lines. Not landed.
#include "cpu/gemm_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu::gemm {
namespace {
struct GemmTileAvx2 {
  static constexpr int kMr = 6, kUnrollK = 4, kMcTiles = 8;
  static constexpr bool kSplitNarrow = false;
  // = kMr: for Q·Kᵀ (K = 64) on Zen 3, 4- and 3-row tiles took 1-28 % longer (alternating runs).
  // Q·Kᵀ (A in place, K <= 64) runs gemm_impl.h's short_k_tiles: 8 heads of [N,64]·[N,64]ᵀ
  // on Zen 3 (alternating runs in one process, session 21) took 0.86-0.96 of the time at N = 128,
  // 0.81-0.96 at 512, 0.75-0.94 at 1024 and 0.89-0.96 at 4096, at 1 and 2 threads. Dropping
  // only the B prefetch gave most of it at N = 4096; the per-tile kernel inlined with its
  // prefetches kept gained nothing at N = 512.
  static constexpr bool kShortKLoop = true;
  static constexpr bool kShortKFetchAndStreamY = false;  // plain stores, no fetch (gemm_impl.h)
  // B prefetched by the first tile of each panel only: x[N,512]·W[1536|2048,512]ᵀ and
  // x[N,2048]·W[512,2048]ᵀ for N = 128..4096 took 0.89-1.01 of the time (median ~0.95) at 1
  // and 2 threads, attention's P·V (8 heads of [N,N]·[N,64], N = 512..4096) 0.83-0.99,
  // lra-text-fourier-r0.2 / vanilla / fastformer-d512-l6 at N = 512 0.93-1.01 (Zen 3,
  // alternating runs in one process, session 21).
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
