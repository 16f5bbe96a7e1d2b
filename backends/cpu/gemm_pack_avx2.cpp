// The GEMM's panel packer (gemm.h), AVX2+F16C: copies or 8x8-transposes f32/f16/bf16 source
// blocks into k-major panels, widening 16-bit values exactly. The AVX-512 level uses it too
// (every AVX-512 machine has AVX2/F16C; packing is memory-bound).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cpu/gemm.h"

namespace longrun::cpu::gemm {
namespace {

// Lane masks for maskload/maskstore: the first `count` of 8 lanes (count in [0, 8]).
inline __m256i lane_mask(int64_t count) {
  alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - count));
}

// Eight consecutive elements of type T widened to f32; `count` < 8 reads only that many
// (the rest are 0), so a partial load never touches memory past the matrix.
template <typename T>
__m256 load8(const T* p, int64_t count);

template <>
inline __m256 load8<float>(const float* p, int64_t count) {
  return count >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lane_mask(count));
}

inline __m128i load8_u16(const uint16_t* p, int64_t count) {
  if (count >= 8) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  alignas(16) uint16_t tmp[8] = {};
  std::memcpy(tmp, p, size_t(std::max<int64_t>(count, 0)) * 2);
  return _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
}

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

template <>
inline __m256 load8<F16>(const F16* p, int64_t count) {
  return _mm256_cvtph_ps(load8_u16(reinterpret_cast<const uint16_t*>(p), count));
}

template <>
inline __m256 load8<BF16>(const BF16* p, int64_t count) {
  // bf16 is the top half of an f32: widen by a 16-bit shift (exact, NaN stays NaN).
  const __m256i u = _mm256_cvtepu16_epi32(load8_u16(reinterpret_cast<const uint16_t*>(p), count));
  return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}

template <typename T>
inline float load1(const T* p) {
  if constexpr (std::is_same_v<T, F16>)
    return f16_to_f32(p->bits);
  else if constexpr (std::is_same_v<T, BF16>)
    return bf16_to_f32(p->bits);
  else
    return *p;
}

// The first `count` lanes of v (count in [1, 8]) with plain stores of 4, 2 and 1 lanes, not
// vmaskmovps, which is microcoded on AMD cores: A panels are 6 wide (the AVX2 tile's rows),
// so every 8x8 transpose of an A block would end in eight masked stores.
inline void store8(float* p, __m256 v, int64_t count) {
  if (count >= 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  __m128 part = _mm256_castps256_ps128(v);
  if (count >= 4) {
    _mm_storeu_ps(p, part);
    p += 4;
    count -= 4;
    part = _mm256_extractf128_ps(v, 1);
  }
  if (count >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
    p += 2;
    count -= 2;
    part = _mm_movehl_ps(part, part);
  }
  if (count >= 1) _mm_store_ss(p, part);
}

// In-register 8x8 transpose: r[i] holds row i on entry, column i on exit.
inline void transpose8x8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// s_w == 1: each k row of the panel is `w` contiguous source elements.
template <typename T>
void pack_copy(const T* src, int64_t s_k, int64_t w, int64_t kc, int width, float* dst) {
  for (int64_t k = 0; k < kc; ++k) {
    const T* s = src + k * s_k;
    float* d = dst + k * width;
    for (int64_t i = 0; i < width; i += 8)
      store8(d + i, load8(s + i, std::clamp<int64_t>(w - i, 0, 8)), width - i);
  }
}

// s_k == 1: the source holds the panel's `w` lines contiguously along k, so 8x8 blocks
// are transposed in registers.
template <typename T>
void pack_transpose(const T* src, int64_t s_w, int64_t w, int64_t kc, int width, float* dst) {
  int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    for (int64_t i = 0; i < width; i += 8) {
      __m256 r[8];
      for (int j = 0; j < 8; ++j) r[j] = i + j < w ? load8(src + (i + j) * s_w + k, 8) : _mm256_setzero_ps();
      transpose8x8(r);
      for (int j = 0; j < 8; ++j) store8(dst + (k + j) * width + i, r[j], width - i);
    }
  }
  for (; k < kc; ++k)
    for (int64_t i = 0; i < width; ++i) dst[k * width + i] = i < w ? load1(src + i * s_w + k) : 0.0f;
}

template <typename T>
void pack_strided(const T* src, int64_t s_w, int64_t s_k, int64_t w, int64_t kc, int width, float* dst) {
  for (int64_t k = 0; k < kc; ++k)
    for (int64_t i = 0; i < width; ++i) dst[k * width + i] = i < w ? load1(src + i * s_w + k * s_k) : 0.0f;
}

template <typename T>
void pack_panel_typed(const T* src, int64_t s_w, int64_t s_k, int64_t w, int64_t kc, int width, float* dst) {
  if (s_w == 1 || w == 1)
    pack_copy(src, s_k, w, kc, width, dst);
  else if (s_k == 1)
    pack_transpose(src, s_w, w, kc, width, dst);
  else
    pack_strided(src, s_w, s_k, w, kc, width, dst);
}

}  // namespace

void pack_panel_avx2(const void* src, DType dtype, int64_t s_w, int64_t s_k, int64_t w, int64_t kc, int width,
                     float* dst) {
  switch (dtype) {
    case DType::f16: pack_panel_typed(static_cast<const F16*>(src), s_w, s_k, w, kc, width, dst); return;
    case DType::bf16: pack_panel_typed(static_cast<const BF16*>(src), s_w, s_k, w, kc, width, dst); return;
    default: pack_panel_typed(static_cast<const float*>(src), s_w, s_k, w, kc, width, dst); return;
  }
}

}  // namespace longrun::cpu::gemm
