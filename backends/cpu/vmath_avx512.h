// Vector f32 math for AVX-512F (16 lanes): the same algorithms, coefficients and error
// bounds as vmath_avx2.h (read that file's comment), with AVX-512's scalef for the 2^n
// scaling and mask registers for the blends. Include ONLY from *_avx512.cpp files.
#pragma once

#include <immintrin.h>

#include "cpu/vmath_avx2.h"

namespace longrun::cpu::avx512 {

template <int N>
static inline __m512 horner(const float (&c)[N], __m512 x) {
  __m512 p = _mm512_set1_ps(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(c[i]));
  return p;
}

// exp: scalef computes p * 2^n with one rounding (subnormal results included), which is
// exactly what the AVX2 version's two-step scaling computes.
static inline __m512 exp_ps(__m512 x) {
  using namespace vmath;
  x = _mm512_min_ps(_mm512_set1_ps(kExpMax), x);  // second operand on NaN: NaN passes
  x = _mm512_max_ps(_mm512_set1_ps(kExpMin), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = horner(kExpP, r);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

static inline __m512 tanh_ps(__m512 x) {
  using namespace vmath;
  const __m512 a = _mm512_abs_ps(x);
  const __m512 z = _mm512_mul_ps(x, x);
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(x, z), horner(kTanhP, z), x);
  const __mmask16 is_small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(kTanhSmall), _CMP_LT_OQ);
  if (is_small == 0xffff) return small;
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 e = exp_ps(_mm512_add_ps(a, a));
  const __m512 t = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(int(0x80000000u)));
  const __m512 large = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
  return _mm512_mask_blend_ps(is_small, large, small);
}

static inline __m512 gelu_ps(__m512 x) {
  using namespace vmath;
  const __m512 a = _mm512_abs_ps(x);
  const __m512 ac = _mm512_min_ps(_mm512_set1_ps(kGeluTailClamp), a);
  const __m512 h = _mm512_mul_ps(ac, ac);
  const __m512 small = _mm512_fmadd_ps(h, horner(kGeluW, h), _mm512_mul_ps(_mm512_set1_ps(0.5f), x));
  const __mmask16 is_small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(kGeluSmall), _CMP_LT_OQ);
  if (is_small == 0xffff) return small;
  const __m512 four = _mm512_set1_ps(4.0f);
  const __m512 t = _mm512_div_ps(four, _mm512_add_ps(four, ac));
  const __m512 r = _mm512_mul_ps(t, horner(kMillsP, t));
  const __m512 l = _mm512_fmsub_ps(ac, ac, h);
  __m512 e = exp_ps(_mm512_mul_ps(_mm512_set1_ps(-0.5f), h));
  e = _mm512_fnmadd_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), l), e, e);
  const __m512 m = _mm512_mul_ps(_mm512_mul_ps(ac, e), r);
  const __m512 y = _mm512_sub_ps(_mm512_max_ps(_mm512_setzero_ps(), x), m);
  const __mmask16 neg_inf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-__builtin_inff()), _CMP_EQ_OQ);
  return _mm512_mask_blend_ps(is_small, _mm512_mask_blend_ps(neg_inf, y, _mm512_set1_ps(__builtin_nanf(""))), small);
}

static inline __m512 gelu_tanh_ps(__m512 x) {
  using namespace vmath;
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 w = _mm512_mul_ps(x, _mm512_fmadd_ps(x2, _mm512_set1_ps(kGeluTanhK3), _mm512_set1_ps(kGeluTanhK1)));
  const __m512 s = exp_ps(_mm512_or_ps(w, _mm512_set1_ps(-0.0f)));  // e^{-|w|}
  const __m512 num = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(w, _mm512_setzero_ps(), _CMP_GT_OQ), x, s);
  return _mm512_div_ps(num, _mm512_add_ps(_mm512_set1_ps(1.0f), s));
}

}  // namespace longrun::cpu::avx512
