// The AVX-512 instantiation of the GEMM microkernel (gemm_impl.h; gemm.h): a 14 x 32 tile,
// 28 accumulators, two B vectors and one A broadcast in flight (31 of 32 zmm). Measured
// against 12x32, 10x32, 8x48, 7x48, 6x64 and 4x64 on Sapphire Rapids: 14x32, 12x32 and
// 7x48 lead within noise; 14x32 has the fewest B loads per FMA. Narrow panels (at most 16
// valid columns) run the one-vector kernel. Attention's P·V (A = P and B = V read in place,
// N = 64) runs 6 x 64 tiles instead: on Zen 4, alternating runs, [N,N]·[N,64] over 8 heads
// took 10.4 ms instead of 12.5 at N = 1024 and 159 instead of 199 at N = 4096 (1 and 2
// threads alike; even at N = 512, where P's rows are 2 KiB apart and 14 of them share no set).
#include "cpu/gemm_impl.h"
#include "cpu/vec_avx512.h"

namespace longrun::cpu::gemm {
namespace {
struct GemmTileAvx512 {
  static constexpr int kMr = 14, kUnrollK = 2, kMcTiles = 4;
  static constexpr bool kSplitNarrow = true;
  // Q·Kᵀ (A in place, K <= 64) through gemm_impl.h's short_k_tiles, with Y's lines fetched
  // ahead and Y streamed as in the per-tile path: 8 heads of [N,64]·[N,64]ᵀ on Zen 4
  // (alternating runs in one process, four runs, session 23) took 0.95-0.98 of the per-tile
  // time at N = 128, 0.90-0.99 at 512 and 1024 and 0.94-1.02 at 4096, at 1 and 2 threads.
  // The loop as AVX2 runs it (no fetch, plain stores) took 0.91 at N = 128 but 1.02-1.07 at
  // 512 and 1024 and 1.09-1.17 at 4096; with streaming but no fetch, 1.03-1.06 at 1024 and
  // 0.94-0.97 at 4096.
  static constexpr bool kShortKLoop = true;
  static constexpr bool kShortKFetchAndStreamY = true;
  // Every tile prefetches B (gemm_impl.h): with kFetchBOnce (AVX2's choice, gemm_avx2.cpp) the
  // projections and P·V for N = 128..4096 took 0.96-1.05 of the time at 1 and 2 threads (two
  // alternating runs, one outlier each way), lra-text-fourier-r0.2, lra-text-vanilla and
  // fastformer-d512-l6 at N = 512 0.99-1.09 (Zen 4, session 23): nothing to gain.
  static constexpr bool kFetchBOnce = false;
  static constexpr int kShortKRows = 7;             // direct A, K <= 64 (gemm_impl.h, macro)
  static constexpr int kWideRows = 6, kWideNv = 4;  // 24 accumulators, 4 B vectors, 1 broadcast
  // K blocks of 64 for the wide tile where all of K fits one ordinary block (gemm.cpp,
  // wide_short_k): the 64 x 64 block of V (16 KiB, half of Zen 4's 32 KiB L1d) stays in L1
  // across an M block's tiles, where one block of 512 (128 KiB) streams it from L2 for every
  // 6 rows. Sapphire Rapids (shared VM, session 31), 8 heads of [N,N]·[N,64], paired ratio
  // against oneDNN over three runs each: N = 512 0.68-0.72 -> 0.93-0.99 on 1 thread,
  // 0.78-0.80 -> 0.95-0.97 on 2 (kc 96 and 128 also gained; 160 less). Zen 5 (session 32):
  // kc 64 / 128 / 256 / 512 at N = 512 within noise of each other (paired 0.94-1.01).
  // Longer K keeps blocks of kc_max, so each row of P (beyond the L2 from N = 1024) is read
  // 2 KiB at a time: in 256 B pieces the hardware prefetchers fell behind. Zen 5, three
  // alternating runs, 1 thread: N = 1024 9.3 / 7.9 / 7.4 / 6.8 ms, N = 4096 157 / 113 / 95
  // / 99 ms (paired 0.69 / 0.91 / 1.07 / 1.08); on SPR kc 64 had been 0-10 % ahead there.
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
