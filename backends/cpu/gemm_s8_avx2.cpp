// The AVX2 int8 GEMM (gemm_s8.h): the vectorised row quantization and the 6 x 16 microkernel
// over the packed weight panels (gemm_s8.h, PackedWeightS8). Per K pair the kernel loads the
// panel's two ymm of 8 channels x 2 int16, broadcasts each row's (qa[2t], qa[2t + 1]) as one
// int32 (vpbroadcastd) and adds vpmaddwd's exact int32 pair sums into 12 int32 accumulators
// (with the 2 B vectors and 2 scratch registers, all 16 ymm). K is taken whole per tile, so
// the sums never leave the registers before they are complete; the tile is then dequantized,
// stored and, still in L1, put through the AVX2 matmul epilogue.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "cpu/gemm_s8.h"

namespace longrun::cpu::s8 {
namespace {

__m256i broadcast_pair(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

using PairWord = int32_t __attribute__((may_alias));  // two int16 read as one dword

// One row's K pair against both halves of a panel: acc0 += vpmaddwd(pair, b0), acc1 +=
// vpmaddwd(pair, b1). Written in asm so that each row's broadcast and products stay within
// their two scratch registers: from intrinsics GCC hoists all six broadcasts ahead of the
// products, which with 12 accumulators and 2 B vectors leaves too few of the 16 ymm and
// spills accumulators to the stack on every K pair.
inline void row_pair_x2(__m256i& acc0, __m256i& acc1, const int16_t* pair, __m256i b0, __m256i b1) {
  __m256i av, t;
  asm("vpbroadcastd %[p], %[av]\n\t"
      "vpmaddwd %[b0], %[av], %[t]\n\t"
      "vpaddd %[t], %[acc0], %[acc0]\n\t"
      "vpmaddwd %[b1], %[av], %[av]\n\t"
      "vpaddd %[av], %[acc1], %[acc1]"
      : [acc0] "+x"(acc0), [acc1] "+x"(acc1), [av] "=&x"(av), [t] "=&x"(t)
      : [p] "m"(*reinterpret_cast<const PairWord*>(pair)), [b0] "x"(b0), [b1] "x"(b1));
}

// One tile: kRows rows x kNv vectors of 8 channels (n valid columns, n <= 8 kNv).
template <int kRows, int kNv>
void micro(const int16_t* a, int64_t lda, const int16_t* b, int64_t k_pairs, const float* sa, const float* sw,
           float* y, int64_t ldy, int64_t n) {
  __m256i acc[kRows][kNv];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < kNv; ++j) acc[r][j] = _mm256_setzero_si256();
#pragma GCC unroll 1
  for (int64_t t = 0; t < k_pairs; ++t) {
    __m256i bv[kNv];
#pragma GCC unroll 2
    for (int j = 0; j < kNv; ++j) bv[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 * j));
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      if constexpr (kNv == 2) {
        row_pair_x2(acc[r][0], acc[r][1], a + r * lda + 2 * t, bv[0], bv[1]);
      } else {
        acc[r][0] =
            _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(broadcast_pair(a + r * lda + 2 * t), bv[0]));
      }
    }
    b += 2 * kPanelWidth;
  }
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 swv[kNv];
  __m256i mask[kNv];
#pragma GCC unroll 2
  for (int j = 0; j < kNv; ++j) {
    swv[j] = _mm256_loadu_ps(sw + 8 * j);  // the panel's 16 scales (zero past N)
    mask[j] = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(std::min<int64_t>(n - 8 * j, 8))), iota);
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    const __m256 s = _mm256_set1_ps(sa[r]);
#pragma GCC unroll 2
    for (int j = 0; j < kNv; ++j) {
      // float(acc) · (scale_a · scale_w), the order gemm_s8_reference states.
      const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[r][j]), _mm256_mul_ps(s, swv[j]));
      if (n >= 8 * (j + 1))
        _mm256_storeu_ps(y + r * ldy + 8 * j, v);
      else
        _mm256_maskstore_ps(y + r * ldy + 8 * j, mask[j], v);
    }
  }
}

using MicroFn = void (*)(const int16_t*, int64_t, const int16_t*, int64_t, const float*, const float*, float*,
                         int64_t, int64_t);

template <size_t... R>
constexpr std::array<std::array<MicroFn, kTileRows>, 2> micro_table(std::index_sequence<R...>) {
  return {{{&micro<int(R) + 1, 1>...}, {&micro<int(R) + 1, 2>...}}};
}
// kMicro[more than 8 valid columns][rows - 1]
constexpr auto kMicro = micro_table(std::make_index_sequence<kTileRows>());

}  // namespace

void quantize_rows_avx2(const float* src, int64_t rows, int64_t cols, int64_t ld, int16_t* q, int64_t ldq,
                        float* scale) {
  const __m256 sign = _mm256_set1_ps(-0.0f), inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 lo = _mm256_set1_ps(-float(kQMax)), hi = _mm256_set1_ps(float(kQMax));
  const int64_t full = cols / 8 * 8, rem = cols - full, padded = full + (rem > 0 ? 8 : 0);
  const __m256i tail =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(rem)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = src + r * ld;
    int16_t* qr = q + r * ldq;
    __m256 mx = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    auto scan = [&](__m256 v) {
      const __m256 ax = _mm256_andnot_ps(sign, v);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(ax, inf, _CMP_NLT_UQ));  // inf or NaN
      mx = _mm256_max_ps(mx, ax);
    };
    for (int64_t k = 0; k < full; k += 8) scan(_mm256_loadu_ps(x + k));
    if (rem > 0) scan(_mm256_maskload_ps(x + full, tail));
    if (_mm256_movemask_ps(bad) != 0) {
      scale[r] = std::numeric_limits<float>::quiet_NaN();
      std::fill(qr, qr + padded, int16_t(0));
      continue;
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    const float s = _mm_cvtss_f32(m4) / float(kQMax);
    scale[r] = s;
    if (!(s > 0.0f)) {
      std::fill(qr, qr + padded, int16_t(0));
      continue;
    }
    const __m256 sv = _mm256_set1_ps(s);
    auto quant = [&](__m256 v, int16_t* dst) {
      __m256 d = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(v, sv), lo), hi);
      d = _mm256_round_ps(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m256i i32 = _mm256_cvttps_epi32(d);
      const __m128i i16 = _mm_packs_epi32(_mm256_castsi256_si128(i32), _mm256_extracti128_si256(i32, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), i16);
    };
    for (int64_t k = 0; k < full; k += 8) quant(_mm256_loadu_ps(x + k), qr + k);
    if (rem > 0) quant(_mm256_maskload_ps(x + full, tail), qr + full);  // masked lanes: 0
  }
}

void gemm_s8_block_avx2(const BlockArgs& g) {
  const PackedWeightS8& w = *g.w;
  for (int64_t p = 0; p < g.panels; ++p) {
    const int64_t panel = g.panel0 + p, c0 = p * kPanelWidth;
    const int64_t n = std::min<int64_t>(kPanelWidth, w.n - panel * kPanelWidth);
    const int16_t* b = w.data.data() + panel * w.k_pairs * 2 * kPanelWidth;
    const float* sw = w.scale.data() + panel * kPanelWidth;
    const MicroFn* row = kMicro[n > 8 ? 1 : 0].data();
    for (int64_t i = 0; i < g.m; i += kTileRows) {
      const int64_t rows = std::min<int64_t>(kTileRows, g.m - i);
      float* yt = g.y + i * g.ldy + c0;
      row[rows - 1](g.qa + i * g.lda, g.lda, b, w.k_pairs, g.sa + i, sw, yt, g.ldy, n);
      if (g.epilogue != nullptr) {
        gemm::Epilogue e = *g.epilogue;
        if (e.bias != nullptr) e.bias += c0;
        if (e.c != nullptr) e.c += i * e.ldc + c0;
        gemm::gemm_epilogue_f32_avx2(yt, g.ldy, rows, n, e);
      }
    }
  }
}

bool pack_panel_s8x16_avx2(const float* const* rows, int count, int64_t k, int16_t* q, int64_t ldq,
                           int16_t* panel, float* scale) {
  for (int i = 0; i < count; ++i) {
    quantize_rows_avx2(rows[i], 1, k, k, q + i * ldq, ldq, scale + i);
    if (std::isnan(scale[i])) return false;  // only a non-finite row has a NaN scale
  }
  // Pair t of channel c (zero past K: the row's padding) to (t * 32 + 16 (c / 8) + 2 (c % 8)).
  const int64_t k_pairs = (k + 1) / 2;
  for (int64_t t = 0; t < k_pairs; ++t) {
    int32_t pairs[kPanelWidth] = {};
    for (int c = 0; c < count; ++c) std::memcpy(&pairs[c], q + c * ldq + 2 * t, sizeof(int32_t));
    std::memcpy(panel + t * 2 * kPanelWidth, pairs, sizeof(pairs));
  }
  return true;
}

}  // namespace longrun::cpu::s8
