// The vector vocabulary of the attention kernels, AVX2 + FMA flavour (8 f32 lanes): loads,
// FMA, masking helpers, a transposed horizontal sum and a small exp. Included only by
// attention*_avx2.cpp; the generic algorithms (attention_flash_impl.h,
// sparse_attention_impl.h) are written against this struct and its AVX-512 twin.
//
// Everything lives in an ISA-specific namespace so that inline functions compiled with
// AVX2 flags can never be merged by the linker with a scalar copy.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace longrun::cpu::attn_avx2 {

struct Vec {
  using T = __m256;
  static constexpr int L = 8;

  // All-ones in lanes [0, n): the mask of maskload/maskstore and blends.
  static __m256i first_n_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }

  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  // The first n lanes (0 <= n <= L); the rest read as zero and are never touched in memory.
  static T load_n(const float* p, int n) { return _mm256_maskload_ps(p, first_n_mask(n)); }
  static void store_n(float* p, T v, int n) { _mm256_maskstore_ps(p, first_n_mask(n), v); }

  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T div(T a, T b) { return _mm256_div_ps(a, b); }
  static T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }  // a * b + c
  // max(a, b); when exactly one is NaN the result is b (x86 rule). Callers never rely on
  // the running max to carry a NaN: a NaN logit poisons the softmax sum instead.
  static T max(T a, T b) { return _mm256_max_ps(a, b); }

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

  // Software prefetch of one cache line into L1 (gathered K/V rows of sparse attention).
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

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

  // exp(x) for the softmax: arguments are <= 0 (or NaN) there. Range reduction
  // x = n ln2 + r with ln2 split in two (exact n ln2_hi), a degree-6 polynomial on
  // |r| <= ln2/2 (about 1 ulp), then scaling by 2^n through the exponent bits.
  // exp(-inf) = 0, results below the normal range flush to 0, NaN stays NaN.
  static T exp(T x) {
    const T lo = _mm256_set1_ps(-87.33654f), hi = _mm256_set1_ps(88.0f);
    const T underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_min_ps(hi, _mm256_max_ps(lo, x));  // max/min return x when x is NaN
    const T n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    T r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    T p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    // 2^n for n in [-126, 127]; NaN lanes give garbage here but p is NaN there.
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const T y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_blendv_ps(y, _mm256_setzero_ps(), underflow);
  }
};

}  // namespace longrun::cpu::attn_avx2
