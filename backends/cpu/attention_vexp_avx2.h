// The vector vocabulary of the attention kernels, AVX2 + FMA flavour (8 f32 lanes): the shared
// avx2::Vec (vec_avx2.h) plus the attention's own masking helpers and transposed horizontal
// sum; the softmax's exp is the shared Vec::exp_neg (vmath). Included only by attention*_avx2.cpp; the
// generic algorithms (attention_flash_impl.h, sparse_attention_impl.h) are written against this struct and
// its AVX-512 counterpart.
//
// Everything lives in an ISA-specific namespace so that inline functions compiled with
// these flags can never be merged by the linker with a copy for another ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu/vec_avx2.h"

namespace longrun::cpu::attn_avx2 {

struct Vec : avx2::Vec {
  // All-ones in lanes [0, n): the mask of maskload/maskstore and blends.
  static __m256i first_n_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }

  // The first n lanes (0 <= n <= L); the rest read as zero and are never touched in memory.
  static T load_n(const float* p, int n) { return _mm256_maskload_ps(p, first_n_mask(n)); }
  static void store_n(float* p, T v, int n) {
    avx2::Vec::store_n(p, _mm256_castsi256_ps(first_n_mask(n)), v);
  }

  // L bf16 values widened exactly to f32 (vpmovzxwd, then vpslld 16: the bf16 bits become
  // the high half of the f32).
  static T load_bf16(const uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  // The first n bf16 values (0 <= n <= L) widened; the rest read as zero and are never
  // touched in memory (AVX2 has no 16-bit masked load: they pass through a zeroed copy).
  static T load_bf16_n(const uint16_t* p, int n) {
    alignas(16) uint16_t tmp[L] = {};
    std::memcpy(tmp, p, sizeof(uint16_t) * size_t(n));
    return load_bf16(tmp);
  }

  // Lanes whose visible-key count nvis[lane] is <= j become -inf (causal mask of key j).
  static T mask_invisible(T s, const int32_t* nvis, int32_t j) {
    const __m256i nv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(nvis));
    const __m256i vis = _mm256_cmpgt_epi32(nv, _mm256_set1_epi32(j));
    return _mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), s, _mm256_castsi256_ps(vis));
  }
  // Lanes >= n become -inf (the unused tail of a group of logits).
  static T keep_first_n(T s, int n) {
    return _mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), s, _mm256_castsi256_ps(first_n_mask(n)));
  }
  // -inf lanes become 0: the shift of a softmax whose keys are all -inf (or absent), so that
  // exp(x - shift) gives 0 instead of exp(-inf + inf) = NaN.
  static T neg_inf_to_zero(T m) {
    const T ninf = _mm256_cmp_ps(m, _mm256_set1_ps(-__builtin_inff()), _CMP_EQ_OQ);
    return _mm256_blendv_ps(m, _mm256_setzero_ps(), ninf);
  }

  static float hsum(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(T v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }

  // Lane s of the result = sum of the lanes of a[s] (8 dot-product partials -> 8 dots) in a
  // fixed tree of horizontal adds.
  static T transpose_sum(const T* a) {
    const T t0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const T t1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
  }

  // Lane l = p[l * stride] (stride in floats, (L - 1) * stride < 2^31).
  static T gather(const float* p, int32_t stride) {
    const __m256i idx =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(stride));
    return _mm256_i32gather_ps(p, idx, 4);
  }
};

}  // namespace longrun::cpu::attn_avx2
