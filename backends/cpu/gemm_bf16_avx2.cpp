// The AVX2 bf16 GEMM (gemm_bf16.h): the vectorised activation rounding and the 6 x 16
// microkernel over the packed weight panels (gemm_bf16.h, PackedWeightBF16). Per k the kernel
// widens the panel's 16 bf16 to two ymm of f32 as it loads them (vpmovzxwd, vpslld 16: exact),
// broadcasts each row's rounded a[m, k] (vbroadcastss) and adds the products into 12 f32
// accumulators with FMA, k in order. K is taken whole per tile; the tile is then stored and,
// still in L1, put through the AVX2 matmul epilogue.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "cpu/gemm_bf16.h"

namespace longrun::cpu::bf16 {
namespace {

using Half = __m128i __attribute__((may_alias));  // 8 bf16 of a packed panel row

// Widening: vpmovzxwd puts each bf16 in the low half of a dword, vpslld 16 moves it to the
// high half, which is the f32 of the same value (exact).
inline __m256 widen(const uint16_t* p) {
  __m256 r;
  asm("vpmovzxwd %[p], %[r]\n\t"
      "vpslld $16, %[r], %[r]"
      : [r] "=x"(r)
      : [p] "m"(*reinterpret_cast<const Half*>(p)));
  return r;
}
// Three rows of a 16-column tile for one k: acc[r][j] += a[r * lda] * b_j (a broadcast). In
// asm, as two such statements per K step (an asm takes at most 30 operands), so that the 12
// accumulators, the 2 widened vectors and the broadcast stay in the 16 ymm: written from
// intrinsics, GCC keeps a third of the tile on the stack across the K loop.
inline void rows3_x16(__m256& c00, __m256& c01, __m256& c10, __m256& c11, __m256& c20, __m256& c21,
                      const float* a, int64_t lda, __m256 b0, __m256 b1) {
  __m256 av;
  asm("vbroadcastss %[a0], %[av]\n\t"
      "vfmadd231ps %[b0], %[av], %[c00]\n\t"
      "vfmadd231ps %[b1], %[av], %[c01]\n\t"
      "vbroadcastss %[a1], %[av]\n\t"
      "vfmadd231ps %[b0], %[av], %[c10]\n\t"
      "vfmadd231ps %[b1], %[av], %[c11]\n\t"
      "vbroadcastss %[a2], %[av]\n\t"
      "vfmadd231ps %[b0], %[av], %[c20]\n\t"
      "vfmadd231ps %[b1], %[av], %[c21]"
      : [c00] "+x"(c00), [c01] "+x"(c01), [c10] "+x"(c10), [c11] "+x"(c11), [c20] "+x"(c20), [c21] "+x"(c21),
        [av] "=&x"(av)
      : [b0] "x"(b0), [b1] "x"(b1), [a0] "m"(a[0]), [a1] "m"(a[lda]), [a2] "m"(a[2 * lda]));
}

// One tile: kRows rows x kNv vectors of 8 channels (n valid columns, n <= 8 kNv).
template <int kRows, int kNv>
void micro(const float* a, int64_t lda, const uint16_t* b, int64_t kc, float* y, int64_t ldy, int64_t n) {
  __m256 acc[kRows][kNv];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < kNv; ++j) acc[r][j] = _mm256_setzero_ps();
  if constexpr (kRows == 6 && kNv == 2) {
    // The full tile: the accumulators as named locals (an array passed to the asm would be
    // stored back to the stack on every K step).
    __m256 c00 = acc[0][0], c01 = acc[0][1], c10 = acc[1][0], c11 = acc[1][1], c20 = acc[2][0],
           c21 = acc[2][1];
    __m256 c30 = acc[3][0], c31 = acc[3][1], c40 = acc[4][0], c41 = acc[4][1], c50 = acc[5][0],
           c51 = acc[5][1];
#pragma GCC unroll 1
    for (int64_t k = 0; k < kc; ++k) {
      const __m256 b0 = widen(b), b1 = widen(b + 8);
      rows3_x16(c00, c01, c10, c11, c20, c21, a + k, lda, b0, b1);
      rows3_x16(c30, c31, c40, c41, c50, c51, a + 3 * lda + k, lda, b0, b1);
      b += kPanelWidth;
    }
    acc[0][0] = c00, acc[0][1] = c01, acc[1][0] = c10, acc[1][1] = c11, acc[2][0] = c20, acc[2][1] = c21;
    acc[3][0] = c30, acc[3][1] = c31, acc[4][0] = c40, acc[4][1] = c41, acc[5][0] = c50, acc[5][1] = c51;
  } else {
#pragma GCC unroll 1
    for (int64_t k = 0; k < kc; ++k) {
      __m256 bv[kNv];
#pragma GCC unroll 2
      for (int j = 0; j < kNv; ++j) bv[j] = widen(b + 8 * j);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
#pragma GCC unroll 2
        for (int j = 0; j < kNv; ++j) acc[r][j] = _mm256_fmadd_ps(av, bv[j], acc[r][j]);
      }
      b += kPanelWidth;
    }
  }
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
#pragma GCC unroll 2
  for (int j = 0; j < kNv; ++j) {
    const __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(std::min<int64_t>(n - 8 * j, 8))), iota);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      if (n >= 8 * (j + 1))
        _mm256_storeu_ps(y + r * ldy + 8 * j, acc[r][j]);
      else
        _mm256_maskstore_ps(y + r * ldy + 8 * j, mask, acc[r][j]);
    }
  }
}

using MicroFn = void (*)(const float*, int64_t, const uint16_t*, int64_t, float*, int64_t, int64_t);

template <size_t... R>
constexpr std::array<std::array<MicroFn, kTileRows>, 2> micro_table(std::index_sequence<R...>) {
  return {{{&micro<int(R) + 1, 1>...}, {&micro<int(R) + 1, 2>...}}};
}
// kMicro[more than 8 valid columns][rows - 1]
constexpr auto kMicro = micro_table(std::make_index_sequence<kTileRows>());

}  // namespace

void round_rows_avx2(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst, int64_t ldd) {
  const int64_t full = cols / 8 * 8, rem = cols - full;
  const __m256i tail =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(rem)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
  const __m256i top = _mm256_set1_epi32(int32_t(0xffff0000u)), quiet = _mm256_set1_epi32(0x00400000);
  // f32_to_bf16 (dtype.h) on 8 lanes: u + 0x7fff + (bit 16 of u), the low 16 bits dropped
  // (round to nearest even; a carry into the exponent gives the next power of two or an
  // infinity); a NaN keeps its top 16 bits with the quiet bit set.
  auto round8 = [&](__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i r = _mm256_and_si256(_mm256_add_epi32(u, _mm256_add_epi32(half, lsb)), top);
    const __m256i nan = _mm256_and_si256(_mm256_or_si256(u, quiet), top);
    return _mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(nan),
                            _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  };
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = src + r * ld;
    float* d = dst + r * ldd;
    for (int64_t k = 0; k < full; k += 8) _mm256_storeu_ps(d + k, round8(_mm256_loadu_ps(x + k)));
    if (rem > 0) _mm256_storeu_ps(d + full, round8(_mm256_maskload_ps(x + full, tail)));  // masked lanes: 0
  }
}

void gemm_bf16_block_avx2(const BlockArgs& g) {
  const PackedWeightBF16& w = *g.w;
  for (int64_t p = 0; p < g.panels; ++p) {
    const int64_t panel = g.panel0 + p, c0 = p * kPanelWidth;
    const int64_t n = std::min<int64_t>(kPanelWidth, w.n - panel * kPanelWidth);
    const uint16_t* b = w.data.data() + panel * w.k * kPanelWidth;
    const MicroFn* row = kMicro[n > 8 ? 1 : 0].data();
    for (int64_t i = 0; i < g.m; i += kTileRows) {
      const int64_t rows = std::min<int64_t>(kTileRows, g.m - i);
      float* yt = g.y + i * g.ldy + c0;
      row[rows - 1](g.a + i * g.lda, g.lda, b, w.k, yt, g.ldy, n);
      if (g.epilogue != nullptr) {
        gemm::Epilogue e = *g.epilogue;
        if (e.bias != nullptr) e.bias += c0;
        if (e.c != nullptr) e.c += i * e.ldc + c0;
        gemm::gemm_epilogue_f32_avx2(yt, g.ldy, rows, n, e);
      }
    }
  }
}

}  // namespace longrun::cpu::bf16
