// Vector f32 math for AVX2+FMA (8 lanes): exp, tanh, gelu (erf form) and gelu (tanh form).
// Include ONLY from files compiled with AVX2 flags (*_avx2.cpp, *_avx512.cpp). Every
// function is `static inline`: each ISA translation unit keeps a private copy, so the linker
// can never merge an AVX body into code that runs on a machine without AVX.
//
// Polynomial coefficients were fitted by a weighted Remez exchange in long double (relative
// error weight) and rounded to f32. Error bounds, measured against double-precision
// std::exp / std::tanh / std::erfc over EVERY f32 input (all 2^32 bit patterns for the
// AVX-512 versions, every 61st pattern for these AVX2 ones, which gave the same or smaller
// maxima):
//   exp_ps        max 0.91 ulp (relative 7.7e-8) on every normal result; subnormal results
//                 (-103.97 < x < -87.34) are computed with one final rounding too.
//                 x > 88.7228 -> +inf, x < -103.97 -> +0, +inf -> +inf, -inf -> +0, NaN -> NaN.
//   exp_neg_ps    (internal, x <= 0) as exp_ps, but results below 2^-126 are flushed to +0
//                 (bit for bit exp_ps above that); the AVX-512 version (vmath_avx512.h: a
//                 2^(j/32) table and a quadratic) max 1.76 ulp over all 2^31 sign-set
//                 patterns, every NaN pattern kept.
//   tanh_ps       max 1.36 ulp (relative 1.5e-7); |x| < 0.625 uses an odd polynomial, so tiny
//                 x keep full relative accuracy; |x| >= 9.5 -> +-1 exactly (as rounding gives
//                 from 9.01 on); +-inf -> +-1, NaN -> NaN.
//   gelu_ps       x Phi(x): max 6.45 ulp (relative 7.7e-7) on every normal result; the AVX-512
//                 version (vmath_avx512.h: a piecewise polynomial for x > -6.9, max 3.15 ulp on
//                 every f32 input there, and below that a table-driven exp) max 6.97 ulp
//                 (both measured on every 2nd f32 bit pattern with |x| < 16 and a sample
//                 beyond), including the far negative tail where gelu(x) is tiny
//                 (0.5 x (1 + erf) would lose all relative accuracy there); results below
//                 2^-126 (x < -13.15) are flushed to 0 (the reference's double 1 + erf already
//                 rounds to 0 below x = -8.3). +inf -> +inf, -inf -> NaN (as the reference's
//                 -inf * 0), NaN -> NaN.
//   gelu_tanh_ps  0.5 x (1 + tanh(u)) evaluated as x / (1 + exp(-2u)): max |y - ref| /
//                 max(1, |ref|) = 2.0e-7 over all inputs; in the negative tail the relative
//                 error grows like |2u| * 1.5e-7 (the f32 rounding of u itself, inherent to any
//                 f32 evaluation: 1.3e-5 at x = -9.9), and results below ~1e-36 (x < -9.9) flush
//                 to 0 (the reference rounds them to 0 below x = -5.5). +inf -> +inf,
//                 -inf -> NaN, NaN -> NaN.
// tests/unit/cpu_vmath_test.cpp re-checks exp/tanh/gelu on 2^22 patterns, and exp_neg, in every build.
#pragma once

#include <immintrin.h>

namespace longrun::cpu::vmath {

// exp(r) = 1 + r (1 + r P(r)) on |r| <= ln2/2, P of degree 4: truncation error 3.8e-9
// relative with these f32 coefficients.
inline constexpr float kExpP[5] = {4.999999404e-01f, 1.666652113e-01f, 4.166838899e-02f, 8.368715644e-03f,
                                   1.381460228e-03f};
inline constexpr float kLog2e = 1.442695022e+00f;
inline constexpr float kLn2Hi = 6.931457520e-01f;  // 16 significant bits: n * kLn2Hi is exact
inline constexpr float kLn2Lo = 1.428606765e-06f;  // ln 2 - kLn2Hi
// Outside [kExpMin, kExpMax] exp rounds to 0 / overflows: clamping there keeps n in
// [-150, 128], where the two-step 2^n scaling below stays exact.
inline constexpr float kExpMax = 89.0f;
inline constexpr float kExpMin = -104.0f;
// exp(x) >= 2^-126 (a normal f32) for x >= kExpMinNormal.
inline constexpr float kExpMinNormal = -87.33f;

// tanh(x) = x + x^3 P(x^2) on |x| < 0.625, P of degree 4: truncation 8.6e-9 relative.
inline constexpr float kTanhSmall = 0.625f;
inline constexpr float kTanhP[5] = {-3.333328068e-01f, 1.333144158e-01f, -5.373971537e-02f, 2.063908800e-02f,
                                    -5.704987328e-03f};

// gelu: Phi(-a) = exp(-a^2/2) R(a) with R(a) = Phi(-a) e^{a^2/2} (a scaled Mills ratio) as
// the rational kGeluN(a) / kGeluD(a) of degrees 4 / 5, fitted (Lawson-weighted least squares,
// relative error) on a in [0, 13.2]: 5e-9 relative with these f32 coefficients in exact
// arithmetic, ~3e-7 worst case with the f32 FMA evaluation of both polynomials.
inline constexpr float kGeluN[5] = {5.000000000e-01f, 4.354488552e-01f, 1.811317354e-01f, 3.992539272e-02f,
                                    4.011515994e-03f};
inline constexpr float kGeluD[6] = {1.000000000e+00f, 1.668782592e+00f, 1.193755269e+00f,
                                    4.639183879e-01f, 1.000855938e-01f, 1.005523372e-02f};
// exp(-a^2/2) = 2^n e^r is reduced in s = -2r = a^2 + 2 n ln2 (a^2 exact inside the FMA, so
// the reduction keeps full relative accuracy for large a), and e^r = 1 + s (-1/2 + s E(s))
// where E is kExpP rescaled: E_k = kExpP[k] (-1/2)^(k+2), exact power-of-two scalings.
struct GeluExpS {
  float c[5];
};
inline constexpr GeluExpS kGeluExpS = [] {
  GeluExpS e{};
  float f = 0.25f;
  for (int k = 0; k < 5; ++k, f *= -0.5f) e.c[k] = kExpP[k] * f;
  return e;
}();
// Adding 1.5 * 2^23 rounds any |v| < 2^22 to an integer held in the low mantissa bits.
inline constexpr float kRoundMagic = 12582912.0f;
// For |x| > 13.15 the tail term |x| Phi(-|x|) < 2^-126 is flushed to 0 (the reference
// itself gives exactly 0 there: 1 + erf rounds to 0 in double below x = -8.3), so 2^n >=
// 2^-125 stays normal and no subnormal ever reaches the arithmetic (a microcode assist each
// on Intel cores).
inline constexpr float kGeluTailClamp = 13.15f;
// tanh(x) rounds to +-1 for |x| >= 9.01; clamping 2|x| keeps e^{2|x|} finite.
inline constexpr float kTanhClamp = 9.5f;

// gelu_tanh: -2u = x (k1 + k3 x^2), u = sqrt(2/pi) (x + 0.044715 x^3).
inline constexpr float kGeluTanhK1 = -1.595769167e+00f;  // -2 sqrt(2/pi)
inline constexpr float kGeluTanhK3 = -7.135481387e-02f;  // -2 sqrt(2/pi) 0.044715

}  // namespace longrun::cpu::vmath

namespace longrun::cpu::avx2 {

template <int N>
static inline __m256 horner(const float (&c)[N], __m256 x) {
  __m256 p = _mm256_set1_ps(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(c[i]));
  return p;
}

// exp with the error bound in the file comment. n = round(x log2 e), r = x - n ln2 (two
// Cody-Waite steps), exp(x) = exp(r) 2^n. exp_reduced returns exp(r) and n.
static inline __m256 exp_reduced(__m256 x, __m256* n_out) {
  using namespace vmath;
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = horner(kExpP, r);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  *n_out = n;
  return _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
}

// 2^n as an f32 for integer n in [-126, 127] (a normal number).
static inline __m256 pow2_normal(__m256i n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

// 2^n applied as 2^(n/2) 2^(n - n/2): both factors are normal numbers, so the only rounding
// is the final one, which also makes subnormal results correctly rounded from exp(r) 2^n.
// exp_core: x must already lie in [kExpMin, kExpMax] (or be NaN).
static inline __m256 exp_core(__m256 x) {
  __m256 n;
  const __m256 p = exp_reduced(x, &n);
  const __m256i ni = _mm256_cvtps_epi32(n);  // NaN gives garbage here, but p is NaN then
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2_normal(n1)), pow2_normal(n2));
}

static inline __m256 exp_ps(__m256 x) {
  using namespace vmath;
  // min/max return their second operand when either is NaN: NaN passes through.
  x = _mm256_min_ps(_mm256_set1_ps(kExpMax), x);
  return exp_core(_mm256_max_ps(_mm256_set1_ps(kExpMin), x));
}

// exp for x <= 0 (or NaN) whose tiny results do not matter (softmax weights, gelu_tanh):
// results below the normal range (x < kExpMinNormal) are flushed to +0 instead of computed
// as subnormals, which would cost a microcode assist per vector on Intel cores. exp_core's
// steps with one scaling: n lies in [-126, 0] here, so 2^n is a normal number and p 2^n is
// rounded once, as exp_core's exact first step and rounding second step do. Bit for bit the
// same as exp_core down to the flush threshold on every f32 with the sign bit set, +inf and
// every NaN pattern (checked exhaustively), four vector operations fewer. The scaling itself is an integer
// add of n to p's exponent field, not a multiply by 2^n: for x >= kExpMinNormal the result p 2^n is a normal
// number (n = -126 only with r > 0, so p > 1), where the two are the same number, and the integer add runs
// off the FMA pipes. Above 88 that add wraps the exponent instead of overflowing to +inf, so this version is
// for x <= 0 only.
static inline __m256 exp_neg_ps(__m256 x) {
  using namespace vmath;
  const __m256 lo = _mm256_set1_ps(kExpMinNormal);
  const __m256 normal = _mm256_cmp_ps(x, lo, _CMP_NLT_UQ);  // x >= lo or NaN
  __m256 n;
  const __m256 p = exp_reduced(_mm256_max_ps(lo, x), &n);
  // NaN: the conversion gives 0x80000000, whose shift is 0, so p's NaN comes through.
  const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  return _mm256_and_ps(_mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e)), normal);
}

static inline __m256 tanh_ps(__m256 x) {
  using namespace vmath;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_andnot_ps(sign, x);
  const __m256 z = _mm256_mul_ps(x, x);
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(x, z), horner(kTanhP, z), x);
  const __m256 is_small = _mm256_cmp_ps(a, _mm256_set1_ps(kTanhSmall), _CMP_LT_OQ);  // false for NaN
  if (_mm256_movemask_ps(is_small) == 0xff) return small;
  // 1 - 2 / (e^{2a} + 1): e = inf gives exactly 1; NaN stays NaN.
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 a2 = _mm256_min_ps(_mm256_set1_ps(2.0f * kTanhClamp), _mm256_add_ps(a, a));  // NaN passes
  const __m256 e = exp_core(a2);
  const __m256 t = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  const __m256 large = _mm256_or_ps(t, _mm256_and_ps(x, sign));
  return _mm256_blendv_ps(large, small, is_small);
}

// gelu(x) = x Phi(x) with Phi(x) = 1 - Phi(-a) for x > 0 and Phi(-a) for x <= 0, a = |x|:
// the tail Phi(-a) = q 2^n (q = e^r R(a), see kGeluN / kGeluExpS) is computed directly, so
// there is no cancellation on either side (1 - Phi(-a) >= 1/2). For x <= 0 the 2^n scaling
// comes last, after the product x q, so the only subnormal a result can meet is its own
// final rounding. +inf -> +inf, -inf -> -inf * 0 = NaN (as the reference), NaN -> NaN.
static inline __m256 gelu_ps(__m256 x) {
  using namespace vmath;
  const __m256 one = _mm256_set1_ps(1.0f), clamp = _mm256_set1_ps(kGeluTailClamp);
  const __m256 magic = _mm256_set1_ps(kRoundMagic);
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 ac = _mm256_min_ps(clamp, a);                   // NaN passes through
  const __m256 within = _mm256_cmp_ps(a, clamp, _CMP_NGT_UQ);  // a <= clamp or NaN
  const __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
  const __m256 rq = _mm256_div_ps(horner(kGeluN, ac), horner(kGeluD, ac));
  const __m256 t = _mm256_fmadd_ps(_mm256_mul_ps(ac, _mm256_set1_ps(-0.5f * kLog2e)), ac, magic);
  const __m256 n = _mm256_sub_ps(t, magic);  // round(-a^2/2 log2 e), in [-125, 0]
  __m256 s = _mm256_fmadd_ps(ac, ac, _mm256_mul_ps(n, _mm256_set1_ps(2.0f * kLn2Hi)));
  s = _mm256_fmadd_ps(n, _mm256_set1_ps(2.0f * kLn2Lo), s);
  __m256 p = _mm256_fmadd_ps(horner(kGeluExpS.c, s), s, _mm256_set1_ps(-0.5f));
  p = _mm256_fmadd_ps(p, s, one);
  const __m256 q = _mm256_and_ps(within, _mm256_mul_ps(p, rq));  // 0 beyond the clamp
  // 2^n from the integer in t's low bits: n >= -125, a normal number.
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));
  const __m256 scale = pow2_normal(ni);
  const __m256 u = _mm256_blendv_ps(q, _mm256_fnmadd_ps(q, scale, one), pos);
  const __m256 v = _mm256_mul_ps(x, u);
  return _mm256_blendv_ps(_mm256_mul_ps(v, scale), v, pos);
}

// gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x / (1 + e^w), w = -2u: no cancellation for x < 0.
// With s = e^{-|w|} <= 1 (never overflows): y = x / (1 + s) for w <= 0, x s / (1 + s) for
// w > 0. -inf gives -inf * 0 = NaN and +inf gives inf, as the reference.
static inline __m256 gelu_tanh_ps(__m256 x) {
  using namespace vmath;
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 w =
      _mm256_mul_ps(x, _mm256_fmadd_ps(x2, _mm256_set1_ps(kGeluTanhK3), _mm256_set1_ps(kGeluTanhK1)));
  const __m256 s = exp_neg_ps(_mm256_or_ps(w, _mm256_set1_ps(-0.0f)));  // e^{-|w|}
  const __m256 num =
      _mm256_blendv_ps(x, _mm256_mul_ps(x, s), _mm256_cmp_ps(w, _mm256_setzero_ps(), _CMP_GT_OQ));
  return _mm256_div_ps(num, _mm256_add_ps(_mm256_set1_ps(1.0f), s));
}

}  // namespace longrun::cpu::avx2
