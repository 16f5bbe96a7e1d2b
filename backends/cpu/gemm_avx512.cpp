// AVX-512 microkernel of the GEMM (gemm.h) and its macro-kernel loop. Packing is the AVX2
// packer (gemm_avx2.cpp): it is memory-bound and every AVX-512 machine runs it.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "cpu/gemm.h"

namespace longrun::cpu::gemm {
namespace {

// 14 x 32 tile: 28 accumulators, two B vectors and one A broadcast in flight (31 of 32 zmm).
// Measured against 12x32, 10x32, 8x48, 7x48, 6x64 and 4x64 on Sapphire Rapids: 14x32, 12x32
// and 7x48 lead within noise; 14x32 has the fewest B loads per FMA.
constexpr int kMr = 14, kNr = 32;

// PREFETCHW (every AVX-512 CPU has it): fetch a line in exclusive state for a coming store.
inline void prefetch_for_write(const float* p) { asm volatile("prefetchw %0" : : "m"(*p)); }

inline __mmask16 lane_mask16(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(count, 0)) - 1u);
}

// One tile of kRows (<= MR) rows x NR columns. Columns past n are computed on the zero
// padding of the packed B panel and never loaded or stored (masked accesses do not touch
// memory of masked-off lanes). A partial last panel runs the kernel with its exact row count,
// so no FMA is spent on missing rows. kDirect: A is read in place (row r at a + r * lda,
// contiguous along k), addressed from one base per 3 rows (base + {0, 1, 2} * lda fits x86
// scaled-index addressing, so no row pointer spills); otherwise from a packed kc x MR panel.
template <bool kDirect, int kRows, int kNv>
void micro(const float* a, int64_t lda, const float* b, int64_t kc, float* y, int64_t ldy, int64_t n,
           bool accumulate) {
  __mmask16 mask[kNv];
#pragma GCC unroll 8
  for (int j = 0; j < kNv; ++j) mask[j] = lane_mask16(n - 16 * j);
  // Start the Y tile's cache-line fills now so they overlap the K loop: with short K
  // (attention, K = 64) the stores otherwise stall on read-for-ownership misses.
  if (!accumulate) {
    const int64_t last = std::min<int64_t>(n, 16 * kNv) - 1;
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      prefetch_for_write(y + r * ldy);
      prefetch_for_write(y + r * ldy + last);
      if (kNv > 1) prefetch_for_write(y + r * ldy + std::min<int64_t>(16, last));
    }
  }
  __m512 acc[kRows][kNv];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < kNv; ++j)
      acc[r][j] = accumulate ? _mm512_maskz_loadu_ps(mask[j], y + r * ldy + 16 * j) : _mm512_setzero_ps();
  constexpr int kBases = (kRows + 2) / 3;
  const float* base[kBases];
#pragma GCC unroll 8
  for (int i = 0; i < kBases; ++i) base[i] = a + (kDirect ? 3 * i * lda : 0);
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[kNv];
#pragma GCC unroll 8
    for (int j = 0; j < kNv; ++j) bv[j] = _mm512_loadu_ps(b + 16 * j);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(kDirect ? base[r / 3][(r % 3) * lda + k] : a[r]);
#pragma GCC unroll 8
      for (int j = 0; j < kNv; ++j) acc[r][j] = _mm512_fmadd_ps(av, bv[j], acc[r][j]);
    }
    if (!kDirect) a += kMr;
    b += kNr;
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < kNv; ++j) _mm512_mask_storeu_ps(y + r * ldy + 16 * j, mask[j], acc[r][j]);
}

using MicroFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, bool);
using MicroRow = std::array<MicroFn, kMr>;

// kMicro[direct][vectors - 1][rows - 1]: a panel of at most 16 valid columns runs the
// one-vector kernel (half the FMAs of the full width).
template <size_t... R>
constexpr std::array<std::array<MicroRow, 2>, 2> micro_table(std::index_sequence<R...>) {
  return {{{{{&micro<false, int(R) + 1, 1>...}, {&micro<false, int(R) + 1, 2>...}}},
           {{{&micro<true, int(R) + 1, 1>...}, {&micro<true, int(R) + 1, 2>...}}}}};
}
constexpr auto kMicro = micro_table(std::make_index_sequence<kMr>());

}  // namespace

void gemm_macro_f32_avx512(const MacroArgs& g) {
  const bool direct = g.a_direct != nullptr;
  for (int64_t j = 0; j < g.n; j += kNr) {
    const float* bp = g.b + (j / kNr) * g.b_panel_stride;
    const int64_t nn = std::min<int64_t>(kNr, g.n - j);
    for (int64_t i = 0; i < g.m; i += kMr) {
      const int64_t mm = std::min<int64_t>(kMr, g.m - i);
      float* yt = g.y + i * g.ldy + j;
      const float* a = direct ? g.a_direct + i * g.lda : g.a + (i / kMr) * g.kc * kMr;
      kMicro[direct][nn > 16][size_t(mm - 1)](a, g.lda, bp, g.kc, yt, g.ldy, nn, g.accumulate);
      if (g.epilogue != nullptr) {
        Epilogue e = *g.epilogue;
        if (e.bias != nullptr) e.bias += j;
        if (e.c != nullptr) e.c += i * e.ldc + j;
        gemm_epilogue_f32_avx512(yt, g.ldy, mm, nn, e);
      }
    }
  }
}

const GemmIsaKernels& gemm_kernels_avx512() {
  static const GemmIsaKernels k{
      kMr, kNr, 512, 4 * kMr, pack_panel_avx2, gemm_macro_f32_avx512, gemm_epilogue_f32_avx512};
  return k;
}

}  // namespace longrun::cpu::gemm
