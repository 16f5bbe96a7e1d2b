// The vector vocabulary of the attention kernels, AVX-512 flavour (16 f32 lanes): loads,
// FMA, masking helpers, a transposed horizontal sum and a small exp. Included only by
// attention*_avx512.cpp; the generic algorithms (attention_flash_impl.h,
// sparse_attention_impl.h) are written against this struct and its AVX2 twin.
//
// Everything lives in an ISA-specific namespace so that inline functions compiled with
// AVX-512 flags can never be merged by the linker with an AVX2 or scalar copy.
#pragma once

#include <immintrin.h>

#include <cstdint>

// GCC 12's avx512fintrin.h passes a self-initialised `__Y` as the pass-through operand of
// unmasked intrinsics (max, min, cvtps_epi32, shuffles, ...), which -W(maybe-)uninitialized
// reports wherever they are inlined. The files including this header are ours alone.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace longrun::cpu::attn_avx512 {

struct Vec {
  using T = __m512;
  static constexpr int L = 16;

  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  // The first n lanes (0 <= n <= L); the rest read as zero and are never touched in memory.
  static T load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1u), p); }
  static void store_n(float* p, T v, int n) { _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1u), v); }

  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T div(T a, T b) { return _mm512_div_ps(a, b); }
  static T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c
  // max(a, b); when exactly one is NaN the result is b (x86 rule). Callers never rely on
  // the running max to carry a NaN: a NaN logit poisons the softmax sum instead.
  static T max(T a, T b) { return _mm512_max_ps(a, b); }

  // Lanes whose visible-key count nvis[lane] is <= j become -inf (causal mask of key j).
  static T mask_invisible(T s, const int32_t* nvis, int32_t j) {
    const __mmask16 vis = _mm512_cmpgt_epi32_mask(_mm512_loadu_si512(nvis), _mm512_set1_epi32(j));
    return _mm512_mask_blend_ps(vis, _mm512_set1_ps(-__builtin_inff()), s);
  }
  // Lanes >= n become -inf (the unused tail of a group of logits).
  static T keep_first_n(T s, int n) {
    return _mm512_mask_blend_ps(__mmask16((1u << n) - 1u), _mm512_set1_ps(-__builtin_inff()), s);
  }
  // -inf lanes become 0: the shift of a softmax whose keys are all -inf (or absent), so that
  // exp(x - shift) gives 0 instead of exp(-inf + inf) = NaN.
  static T neg_inf_to_zero(T m) {
    const __mmask16 ninf = _mm512_cmp_ps_mask(m, _mm512_set1_ps(-__builtin_inff()), _CMP_EQ_OQ);
    return _mm512_mask_blend_ps(ninf, m, _mm512_setzero_ps());
  }

  // Software prefetch of one cache line into L1 (gathered K/V rows of sparse attention).
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

  static float hsum(T v) { return _mm512_reduce_add_ps(v); }
  static float hmax(T v) { return _mm512_reduce_max_ps(v); }

  // Lane s of the result = sum of the lanes of a[s] (16 dot-product partials -> 16 dots) in
  // a fixed tree of 15 shuffles and adds. The tree leaves lane 4c+t holding input 4t+c, so
  // the inputs are fed in that transposed order.
  static T transpose_sum(const T* a) {
    T x[8];
    for (int k = 0; k < 8; ++k) {
      const int p0 = 2 * k, p1 = 2 * k + 1;
      const T u = a[(p0 % 4) * 4 + p0 / 4], w = a[(p1 % 4) * 4 + p1 / 4];
      x[k] = _mm512_add_ps(_mm512_shuffle_f32x4(u, w, 0x44), _mm512_shuffle_f32x4(u, w, 0xEE));
    }
    T z[4];
    for (int m = 0; m < 4; ++m)
      z[m] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * m], x[2 * m + 1], 0x88),
                           _mm512_shuffle_f32x4(x[2 * m], x[2 * m + 1], 0xDD));
    T u[2];
    for (int n = 0; n < 2; ++n)
      u[n] = _mm512_add_ps(_mm512_shuffle_ps(z[2 * n], z[2 * n + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(z[2 * n], z[2 * n + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
  }

  // exp(x) for the softmax: arguments are <= 0 (or NaN) there. Range reduction
  // x = n ln2 + r with ln2 split in two (exact n ln2_hi), a degree-6 polynomial on
  // |r| <= ln2/2 (about 1 ulp), then scaling by 2^n through the exponent bits.
  // exp(-inf) = 0, results below the normal range flush to 0, NaN stays NaN.
  static T exp(T x) {
    const T lo = _mm512_set1_ps(-87.33654f), hi = _mm512_set1_ps(88.0f);
    const __mmask16 underflow = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    x = _mm512_min_ps(hi, _mm512_max_ps(lo, x));  // max/min return x when x is NaN
    const T n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    T r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    T p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    // 2^n for n in [-126, 127]; NaN lanes give garbage here but p is NaN there.
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    const T y = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
    return _mm512_mask_blend_ps(underflow, y, _mm512_setzero_ps());
  }
};

}  // namespace longrun::cpu::attn_avx512
