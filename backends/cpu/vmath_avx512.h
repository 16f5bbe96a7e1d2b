// Vector f32 math for AVX-512F (16 lanes): the same algorithms and coefficients as
// vmath_avx2.h (whose comment states the error bounds, measured on these AVX-512 versions)
// except gelu's exp factor (below),
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

// gelu as avx2::gelu_ps (x Phi(x), the tail Phi(-a) = exp(-a^2/2) R(a) with the same rational
// R), with three AVX-512 economies, 34 instead of 37 vector operations per 16 lanes (the
// kernel is compute-bound: 7-10 % faster in a tight loop):
//  - exp(-a^2/2) = 2^(k/16) e^(-s/2), k = round(-a^2/2 log2e 16): 2^((k mod 16)/16) comes from a
//    16-entry table by one vpermps (its index is the low 4 bits of the rounding sum t), so the
//    remaining factor needs only a cubic on |s/2| <= ln2/32 (truncation 1e-8);
//  - vrangeps gives min(|x|, clamp) in one instruction, the quotient R is rcp14 plus one
//    correction of the quotient itself (about 1 ulp), and scalef applies 2^floor(k/16);
//  - the two sides share one product: v = scalef(x q, k/16) is x Phi(-a), the result for
//    x <= 0, and x - v for x > 0 (no 1 - Phi rounding first).
// Max error 6.97 ulp over every 2nd f32 input with |x| < 16 (6.45 before; vmath_avx2.h).
inline constexpr float kGeluLog2eX16 = -11.541560173f;     // -log2(e) / 2 * 16
inline constexpr float kGeluLn2Hi16 = 0.086639404296875f;  // 2 ln2 / 16 to 12 bits: k * it is exact
inline constexpr float kGeluLn2Lo16 = 3.993272912e-06f;    // 2 ln2 / 16 - kGeluLn2Hi16
static inline __m512 gelu_ps(__m512 x) {
  using namespace vmath;
  const __m512 clamp = _mm512_set1_ps(kGeluTailClamp), magic = _mm512_set1_ps(kRoundMagic);
  const __m512 ac = _mm512_range_ps(x, clamp, 0x0a);  // min(|x|, clamp), sign cleared; NaN passes
  const __mmask16 within = _mm512_cmp_ps_mask(ac, clamp, _CMP_NGE_UQ);  // |x| < clamp or NaN
  const __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
  const __m512 num = horner(kGeluN, ac), den = horner(kGeluD, ac);
  const __m512 y0 = _mm512_rcp14_ps(den);
  __m512 rq = _mm512_mul_ps(num, y0);
  rq = _mm512_fmadd_ps(y0, _mm512_fnmadd_ps(den, rq, num), rq);
  const __m512 t = _mm512_fmadd_ps(_mm512_mul_ps(ac, _mm512_set1_ps(kGeluLog2eX16)), ac, magic);
  const __m512 k = _mm512_sub_ps(t, magic);  // in [-2000, 0]
  // s = a^2 + k 2ln2/16 (a^2 exact inside the FMA), |s| <= ln2/16; e^(-s/2) to third order.
  __m512 s = _mm512_fmadd_ps(ac, ac, _mm512_mul_ps(k, _mm512_set1_ps(kGeluLn2Hi16)));
  s = _mm512_fmadd_ps(k, _mm512_set1_ps(kGeluLn2Lo16), s);
  const __m512 pow2_frac = _mm512_setr_ps(
      1.0f, 1.044273782f, 1.090507733f, 1.138788635f, 1.189207115f, 1.241857812f, 1.296839555f, 1.354255547f,
      1.414213562f, 1.476826146f, 1.542210825f, 1.610490332f, 1.681792831f, 1.756252160f, 1.834008086f,
      1.915206561f);  // 2^(j/16)
  const __m512 f = _mm512_permutexvar_ps(_mm512_castps_si512(t), pow2_frac);
  // f e^(-s/2) = f + (f s)(-1/2 + s/8 - s^2/48): one rounding on a result close to f.
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(-1.0f / 48.0f), s, _mm512_set1_ps(0.125f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-0.5f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(f, s), p, f);
  const __m512 q = _mm512_maskz_mul_ps(within, p, rq);  // 0 beyond the clamp
  // +inf would make inf * 0 = NaN on the positive side: x capped at FLT_MAX there (a NaN x
  // passes, as min returns its second operand).
  const __m512 xf = _mm512_min_ps(_mm512_set1_ps(3.402823466e+38f), x);
  const __m512 v = _mm512_scalef_ps(_mm512_mul_ps(xf, q), _mm512_mul_ps(k, _mm512_set1_ps(0.0625f)));
  return _mm512_mask_sub_ps(v, pos, x, v);  // x > 0: x - x Phi(-a)
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
