// Vector f32 math for AVX-512F (16 lanes): the same algorithms and coefficients as
// vmath_avx2.h (whose comment states the error bounds, measured on these AVX-512 versions),
// with scalef for the 2^n scaling, mask registers for blends and flushes, and rcp14 plus a
// Newton step instead of a 512-bit division (about 1 ulp, far cheaper). Include ONLY from
// *_avx512.cpp files.
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
// exp_core: x must already lie in [kExpMin, kExpMax] (or be NaN); lanes outside `keep` give
// +0 (their scaling is not even executed, so no subnormal assist either).
static inline __m512 exp_core(__m512 x, __mmask16 keep = 0xffff) {
  using namespace vmath;
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = horner(kExpP, r);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(keep, p, n);
}

static inline __m512 exp_ps(__m512 x) {
  using namespace vmath;
  x = _mm512_min_ps(_mm512_set1_ps(kExpMax), x);  // second operand on NaN: NaN passes
  return exp_core(_mm512_max_ps(_mm512_set1_ps(kExpMin), x));
}

// As avx2::exp_neg_ps: x <= 0 or NaN, results below the normal range flushed to +0. Any
// x < kExpMinNormal (even -inf, where r is NaN) just has its lane masked off.
static inline __m512 exp_neg_ps(__m512 x) {
  using namespace vmath;
  return exp_core(x, _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMinNormal), _CMP_NLT_UQ));  // x >= lo or NaN
}

// 1 / d within ~1 ulp for finite d: rcp14 (relative error < 2^-14) and one Newton step,
// cheaper than a 512-bit division.
static inline __m512 rcp_ps(__m512 d) {
  const __m512 y = _mm512_rcp14_ps(d);
  return _mm512_fmadd_ps(y, _mm512_fnmadd_ps(d, y, _mm512_set1_ps(1.0f)), y);
}

static inline __m512 tanh_ps(__m512 x) {
  using namespace vmath;
  const __m512 a = _mm512_abs_ps(x);
  const __m512 z = _mm512_mul_ps(x, x);
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(x, z), horner(kTanhP, z), x);
  const __mmask16 is_small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(kTanhSmall), _CMP_LT_OQ);
  if (is_small == 0xffff) return small;
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 a2 = _mm512_min_ps(_mm512_set1_ps(2.0f * kTanhClamp), _mm512_add_ps(a, a));  // NaN passes
  const __m512 e = exp_core(a2);
  const __m512 t = _mm512_fnmadd_ps(_mm512_set1_ps(2.0f), rcp_ps(_mm512_add_ps(e, one)), one);
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(int(0x80000000u)));
  const __m512 large = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
  return _mm512_mask_blend_ps(is_small, large, small);
}

// As avx2::gelu_ps. vrangeps gives min(|x|, clamp) in one instruction, the quotient R is
// rcp14 plus one correction of the quotient itself (about 1 ulp), and scalef applies 2^n.
static inline __m512 gelu_ps(__m512 x) {
  using namespace vmath;
  const __m512 one = _mm512_set1_ps(1.0f), clamp = _mm512_set1_ps(kGeluTailClamp);
  const __m512 magic = _mm512_set1_ps(kRoundMagic);
  const __m512 ac = _mm512_range_ps(x, clamp, 0x0a);  // min(|x|, clamp), sign cleared; NaN passes
  const __mmask16 within = _mm512_cmp_ps_mask(ac, clamp, _CMP_NGE_UQ);  // |x| < clamp or NaN
  const __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
  const __m512 num = horner(kGeluN, ac), den = horner(kGeluD, ac);
  const __m512 y0 = _mm512_rcp14_ps(den);
  __m512 rq = _mm512_mul_ps(num, y0);
  rq = _mm512_fmadd_ps(y0, _mm512_fnmadd_ps(den, rq, num), rq);
  const __m512 t = _mm512_fmadd_ps(_mm512_mul_ps(ac, _mm512_set1_ps(-0.5f * kLog2e)), ac, magic);
  const __m512 n = _mm512_sub_ps(t, magic);  // round(-a^2/2 log2 e), in [-125, 0]
  __m512 s = _mm512_fmadd_ps(ac, ac, _mm512_mul_ps(n, _mm512_set1_ps(2.0f * kLn2Hi)));
  s = _mm512_fmadd_ps(n, _mm512_set1_ps(2.0f * kLn2Lo), s);
  __m512 p = _mm512_fmadd_ps(horner(kGeluExpS.c, s), s, _mm512_set1_ps(-0.5f));
  p = _mm512_fmadd_ps(p, s, one);
  const __m512 q = _mm512_maskz_mul_ps(within, p, rq);                            // 0 beyond the clamp
  const __m512 u = _mm512_mask_fnmadd_ps(q, pos, _mm512_scalef_ps(one, n), one);  // pos: 1 - q 2^n
  const __m512 v = _mm512_mul_ps(x, u);
  return _mm512_mask_scalef_ps(v, __mmask16(~pos), v, n);
}

static inline __m512 gelu_tanh_ps(__m512 x) {
  using namespace vmath;
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 w =
      _mm512_mul_ps(x, _mm512_fmadd_ps(x2, _mm512_set1_ps(kGeluTanhK3), _mm512_set1_ps(kGeluTanhK1)));
  const __m512 s = exp_neg_ps(_mm512_or_ps(w, _mm512_set1_ps(-0.0f)));  // e^{-|w|}
  const __m512 num = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(w, _mm512_setzero_ps(), _CMP_GT_OQ), x, s);
  return _mm512_mul_ps(num, rcp_ps(_mm512_add_ps(_mm512_set1_ps(1.0f), s)));
}

}  // namespace longrun::cpu::avx512
