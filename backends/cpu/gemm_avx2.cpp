// The AVX2+FMA microkernel of the GEMM (gemm.h): a 6x16 tile and its macro-kernel loop.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "cpu/gemm.h"

namespace longrun::cpu::gemm {
namespace {

// Lane masks for maskload/maskstore: the first `count` of 8 lanes (count in [0, 8]).
inline __m256i lane_mask(int64_t count) {
  alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - count));
}

// The 6x16 tile: 12 accumulators, two B vectors and one A broadcast in flight (15 of the 16
// ymm registers).
constexpr int kMr = 6, kNr = 16;

// One tile of kRows (<= MR) rows x 16 columns; columns past n are computed on the zero
// padding of the packed B panel and never loaded or stored. A partial last panel runs with
// its exact row count. kDirect: A is read in place (row r at a + r * lda, contiguous along
// k), rows addressed from one base per 3 rows so that x86 scaled-index addressing covers
// them; otherwise from a packed kc x MR panel.
template <bool kDirect, int kRows>
void micro(const float* a, int64_t lda, const float* b, int64_t kc, float* y, int64_t ldy, int64_t n,
           bool accumulate) {
  // Start the Y tile's cache-line fills now so they overlap the K loop (short-K GEMMs
  // otherwise stall on the stores' read-for-ownership misses).
  if (!accumulate)
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      __builtin_prefetch(y + r * ldy, 1, 3);
      __builtin_prefetch(y + r * ldy + std::min<int64_t>(n, kNr) - 1, 1, 3);
    }
  __m256 acc[kRows][2];
  const bool full_n = n == kNr;
  const __m256i mask0 = lane_mask(std::min<int64_t>(n, 8)),
                mask1 = lane_mask(std::clamp<int64_t>(n - 8, 0, 8));
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    if (accumulate) {
      const float* yr = y + r * ldy;
      acc[r][0] = full_n ? _mm256_loadu_ps(yr) : _mm256_maskload_ps(yr, mask0);
      acc[r][1] = full_n ? _mm256_loadu_ps(yr + 8) : _mm256_maskload_ps(yr + 8, mask1);
    } else {
      acc[r][0] = _mm256_setzero_ps();
      acc[r][1] = _mm256_setzero_ps();
    }
  }
  constexpr int kBases = (kRows + 2) / 3;
  const float* base[kBases];
#pragma GCC unroll 2
  for (int i = 0; i < kBases; ++i) base[i] = a + (kDirect ? 3 * i * lda : 0);
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(kDirect ? base[r / 3] + (r % 3) * lda + k : a + r);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
    if (!kDirect) a += kMr;
    b += kNr;
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    float* yr = y + r * ldy;
    if (full_n) {
      _mm256_storeu_ps(yr, acc[r][0]);
      _mm256_storeu_ps(yr + 8, acc[r][1]);
    } else {
      _mm256_maskstore_ps(yr, mask0, acc[r][0]);
      _mm256_maskstore_ps(yr + 8, mask1, acc[r][1]);
    }
  }
}

using MicroFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, bool);

// kMicro[direct][rows - 1].
template <size_t... R>
constexpr std::array<std::array<MicroFn, kMr>, 2> micro_table(std::index_sequence<R...>) {
  return {{{&micro<false, int(R) + 1>...}, {&micro<true, int(R) + 1>...}}};
}
constexpr auto kMicro = micro_table(std::make_index_sequence<kMr>());

}  // namespace

void gemm_macro_f32_avx2_6x16(const MacroArgs& g) {
  const bool direct = g.a_direct != nullptr;
  for (int64_t j = 0; j < g.n; j += kNr) {
    const float* bp = g.b + (j / kNr) * g.b_panel_stride;
    const int64_t nn = std::min<int64_t>(kNr, g.n - j);
    for (int64_t i = 0; i < g.m; i += kMr) {
      const int64_t mm = std::min<int64_t>(kMr, g.m - i);
      float* yt = g.y + i * g.ldy + j;
      const float* a = direct ? g.a_direct + i * g.lda : g.a + (i / kMr) * g.kc * kMr;
      kMicro[direct][size_t(mm - 1)](a, g.lda, bp, g.kc, yt, g.ldy, nn, g.accumulate);
      if (g.epilogue != nullptr) {
        Epilogue e = *g.epilogue;
        if (e.bias != nullptr) e.bias += j;
        if (e.c != nullptr) e.c += i * e.ldc + j;
        gemm_epilogue_f32_avx2(yt, g.ldy, mm, nn, e);
      }
    }
  }
}

const GemmIsaKernels& gemm_kernels_avx2() {
  static const GemmIsaKernels k{
      kMr, kNr, 512, 8 * kMr, pack_panel_avx2, gemm_macro_f32_avx2_6x16, gemm_epilogue_f32_avx2};
  return k;
}

}  // namespace longrun::cpu::gemm
