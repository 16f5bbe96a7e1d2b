// Vector f32 math for AVX-512F (16 lanes): the same algorithms and coefficients as
// vmath_avx2.h (whose comment states the error bounds, measured on these AVX-512 versions)
// except gelu (below: a table-driven polynomial, and the tail's exp factor), with scalef for
// the 2^n scaling, mask registers for blends and flushes, and rcp14 plus a Newton step
// instead of a 512-bit division (about 1 ulp, far cheaper). Include ONLY from *_avx512.cpp
// files.
#pragma once

#include <immintrin.h>

#include "cpu/vmath_avx2.h"
#include "cpu/vmath_gelu_table.h"

// GCC 12 reports its own intrinsics' `__m512 __Y = __Y` undefined-value idiom (the unused
// pass-through operand of every unmasked AVX-512 intrinsic) as uninitialized wherever they are
// inlined: in the out-of-line gelu_tail_ps, in the sanitizer builds also in gelu_ps, and in
// callers that include only this header (the unit tests' probe). The value is never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace longrun::cpu::avx512 {

template <int N>
static inline __m512 horner(const float (&c)[N], __m512 x) {
  __m512 p = _mm512_set1_ps(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(c[i]));
  return p;
}

// exp: scalef computes p * 2^n with one rounding (subnormal results included), which is
// exactly what the AVX2 version's two-step scaling computes.
// exp_core: x must already lie in [kExpMin, kExpMax] (or be NaN).
static inline __m512 exp_core(__m512 x) {
  using namespace vmath;
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = horner(kExpP, r);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

static inline __m512 exp_ps(__m512 x) {
  using namespace vmath;
  x = _mm512_min_ps(_mm512_set1_ps(kExpMax), x);  // second operand on NaN: NaN passes
  return exp_core(_mm512_max_ps(_mm512_set1_ps(kExpMin), x));
}

// exp(x) for x <= 0 or NaN (softmax weights, the attention softmax, gelu_tanh), results below
// 2^-126 (x < kExpMinNormal) flushed to +0 as in avx2::exp_neg_ps, in 10 vector operations
// instead of exp_core's 12, 8 of them on the FMA pipes instead of 11:
//  - one FMA with 1.5 2^18 rounds x / ln2 to a multiple of 1/32, k / 32, whose 32nds are the
//    sum's low five mantissa bits: they index vpermt2ps into 2^(j/32) (kExp2Thirtyseconds),
//    and scalef, which floors its exponent operand, applies 2^floor(k / 32) to the result;
//  - r = x - (k / 32) ln2 (ln2 split in two: (k / 32) ln2_hi is exact for |k| < 2^12) lies in
//    |r| <= ln2/64, where 1 + c1 r + c2 r^2 holds e^r to 5.5e-8 relative (kExpNegQuadratic);
//    the table entry t folds in as t + (t r)(c1 + c2 r), three operations;
//  - a NaN comes through r and scalef; lanes below kExpMinNormal (-inf included, whatever
//    they computed) are zeroed by scalef's mask.
// Max 1.76 ulp against double exp over every f32 with the sign bit set (checked
// exhaustively). It also holds for positive x up to 88.72 (max 1.76 ulp, exhaustively), and
// overflows to +inf above, as scalef does (+inf -> +inf): the softmax's first-logit shift
// relies on that (normalization_impl.h). These loops are bound by the total count of vector
// operations (about three issue per cycle), not by the FMA pipes alone, so the 32-entry
// table, which saves a polynomial term and an operation, is worth its two-register lookup.
inline constexpr float kExpNegLog2e = 1.4426950216e+00f;  // 1 / ln2
inline constexpr float kExpNegLn2Hi = 0.693115234375f;    // ln2 to 12 bits (2839 / 2^12)
inline constexpr float kExpNegLn2Lo = 3.194618330e-05f;   // ln2 - kExpNegLn2Hi
// e^r ~ 1 + c1 r + c2 r^2: {c1, c2}, a relative minimax fit on |r| <= 1.01 ln2/64.
inline constexpr float kExpNegQuadratic[2] = {1.000014901e+00f, 5.000002384e-01f};
alignas(64) inline constexpr float kExp2Thirtyseconds[32] = {
    1.000000000e+00f, 1.021897197e+00f, 1.044273734e+00f, 1.067140460e+00f, 1.090507746e+00f,
    1.114386797e+00f, 1.138788581e+00f, 1.163724899e+00f, 1.189207077e+00f, 1.215247393e+00f,
    1.241857767e+00f, 1.269050956e+00f, 1.296839595e+00f, 1.325236678e+00f, 1.354255557e+00f,
    1.383909941e+00f, 1.414213538e+00f, 1.445180774e+00f, 1.476826191e+00f, 1.509164453e+00f,
    1.542210817e+00f, 1.575980902e+00f, 1.610490322e+00f, 1.645755529e+00f, 1.681792855e+00f,
    1.718619347e+00f, 1.756252170e+00f, 1.794709086e+00f, 1.834008098e+00f, 1.874167681e+00f,
    1.915206552e+00f, 1.957144141e+00f};  // 2^(j/32) rounded to f32

static inline __m512 exp_neg_ps(__m512 x) {
  using namespace vmath;
  const __m512 magic = _mm512_set1_ps(393216.0f);  // 1.5 2^18: the sum's last place is 1/32
  const __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(kExpNegLog2e), magic);
  const __m512 k32 = _mm512_sub_ps(t, magic);  // k / 32, exactly
  __m512 r = _mm512_fnmadd_ps(k32, _mm512_set1_ps(kExpNegLn2Hi), x);
  r = _mm512_fnmadd_ps(k32, _mm512_set1_ps(kExpNegLn2Lo), r);
  const __m512 two_j32 = _mm512_permutex2var_ps(_mm512_load_ps(kExp2Thirtyseconds), _mm512_castps_si512(t),
                                                _mm512_load_ps(kExp2Thirtyseconds + 16));
  const __m512 q =
      _mm512_fmadd_ps(r, _mm512_set1_ps(kExpNegQuadratic[1]), _mm512_set1_ps(kExpNegQuadratic[0]));
  const __m512 p = _mm512_fmadd_ps(_mm512_mul_ps(two_j32, r), q, two_j32);                     // 2^(j/32) e^r
  const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpMinNormal), _CMP_NLT_UQ);  // or NaN
  return _mm512_maskz_scalef_ps(normal, p, k32);  // p 2^floor(k / 32)
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

// gelu over the whole f32 range, as avx2::gelu_ps (x Phi(x), the tail Phi(-a) = exp(-a^2/2) R(a)
// with the same rational R); gelu_ps below uses it only for lanes x <= -kGeluTableClamp. Three
// AVX-512 economies, 34 instead of 37 vector operations per 16 lanes:
//  - exp(-a^2/2) = 2^(k/16) e^(-s/2), k = round(-a^2/2 log2e 16): 2^((k mod 16)/16) comes from a
//    16-entry table by one vpermps (its index is the low 4 bits of the rounding sum t), so the
//    remaining factor needs only a cubic on |s/2| <= ln2/32 (truncation 1e-8);
//  - vrangeps gives min(|x|, clamp) in one instruction, the quotient R is rcp14 plus one
//    correction of the quotient itself (about 1 ulp), and scalef applies 2^floor(k/16);
//  - the two sides share one product: v = scalef(x q, k/16) is x Phi(-a), the result for
//    x <= 0, and x - v for x > 0 (no 1 - Phi rounding first).
// Max error 6.97 ulp over every 2nd f32 input with |x| < 16 (vmath_avx2.h).
inline constexpr float kGeluLog2eX16 = -11.541560173f;     // -log2(e) / 2 * 16
inline constexpr float kGeluLn2Hi16 = 0.086639404296875f;  // 2 ln2 / 16 to 12 bits: k * it is exact
inline constexpr float kGeluLn2Lo16 = 3.993272912e-06f;    // 2 ln2 / 16 - kGeluLn2Hi16
static inline __m512 gelu_rational_ps(__m512 x) {
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

// Out of line: the table path below calls it for whole vectors only when a lane is in the far
// negative tail, and inlined it would crowd the table path's registers.
__attribute__((noinline)) static __m512 gelu_tail_ps(__m512 x) { return gelu_rational_ps(x); }

// gelu(x) = max(x, 0) - |x| Phi(-|x|) (one FMA; for x > 0 it is x - x Phi(-x), so there is no
// 1 - Phi rounding), with Phi(-a) from the piecewise polynomial of vmath_gelu_table.h:
// interval k = round(a (a + 2) / 4) by one FMA (the low 4 bits of the magic-number sum index
// vpermps), then degree 7 in u = a - center[k]. Per 16 lanes that is 10 operations on the FMA
// pipes (9 FMAs and a compare, where mask-writing compares issue on the FMA pipes) and 9
// vpermps, against gelu_rational_ps's 27 on the FMA pipes. |x| and the clamp come from one
// vrangeps (not vandps + vminps). 16 intervals, not 32: vpermps (one register of table)
// issues at about twice the rate of the two-register vpermt2ps. The elementwise gelu runs
// gelu_ps<4> (four vectors side by side); eight would spill registers.
//  - a is clamped at kGeluTableClamp: Phi(-6.9) = 2.6e-12, so for x >= 6.9 the result rounds
//    to x (also +inf); NaN passes the clamp (vrangeps returns it, quieted) and stays NaN.
//  - Lanes x <= -kGeluTableClamp (and -inf) take gelu_rational_ps; each lane's result depends
//    only on its own x, whichever path its neighbours take.
//  - Max error 3.15 ulp over every f32 input above -6.9 (all of them, checked once); 6.97 in
//    the tail.
inline constexpr float kGeluTableClamp = 6.9f;  // below vmath::kGeluTableTop
// W vectors at once, each step for all W before the next (W independent dependency chains
// side by side, so the FMA pipes need not wait on one chain's latency); one branch for all W.
template <int W>
static inline void gelu_ps(__m512 (&x)[W]) {
  using namespace vmath;
  static_assert(kGeluTableClamp < kGeluTableTop && kGeluTableB == 2.0f && kGeluTableDelta == 4.0f);
  const __m512 clamp = _mm512_set1_ps(kGeluTableClamp);
  __m512 ac[W], u[W], p[W];
  __m512i k[W];
  __mmask16 tail[W], any_tail = 0;
#pragma GCC unroll 8
  for (int w = 0; w < W; ++w) {
    ac[w] = _mm512_range_ps(x[w], clamp, 0x0a);  // min(|x|, clamp), sign cleared; NaN passes
    // 1.5 * 2^25 has ulp 4: the sum holds round(a (a + 2) / 4) in its low mantissa bits.
    k[w] = _mm512_castps_si512(
        _mm512_fmadd_ps(ac[w], _mm512_add_ps(ac[w], _mm512_set1_ps(2.0f)), _mm512_set1_ps(50331648.0f)));
    u[w] = _mm512_sub_ps(ac[w], _mm512_permutexvar_ps(k[w], _mm512_load_ps(kGeluTableCenter)));
    p[w] = _mm512_permutexvar_ps(k[w], _mm512_load_ps(kGeluTableCoef[7]));
  }
#pragma GCC unroll 8
  for (int j = 6; j >= 0; --j) {
#pragma GCC unroll 8
    for (int w = 0; w < W; ++w)
      p[w] = _mm512_fmadd_ps(p[w], u[w], _mm512_permutexvar_ps(k[w], _mm512_load_ps(kGeluTableCoef[j])));
  }
#pragma GCC unroll 8
  for (int w = 0; w < W; ++w) {
    tail[w] = _mm512_cmp_ps_mask(x[w], _mm512_set1_ps(-kGeluTableClamp), _CMP_LE_OQ);
    any_tail |= tail[w];
    p[w] = _mm512_fnmadd_ps(ac[w], p[w], _mm512_max_ps(_mm512_setzero_ps(), x[w]));  // max(0, -0) = -0
  }
  if (__builtin_expect(any_tail != 0, 0)) {
#pragma GCC unroll 8
    for (int w = 0; w < W; ++w)
      if (tail[w] != 0) p[w] = _mm512_mask_blend_ps(tail[w], p[w], gelu_tail_ps(x[w]));
  }
#pragma GCC unroll 8
  for (int w = 0; w < W; ++w) x[w] = p[w];
}

static inline __m512 gelu_ps(__m512 x) {
  __m512 v[1] = {x};
  gelu_ps(v);
  return v[0];
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

#pragma GCC diagnostic pop
