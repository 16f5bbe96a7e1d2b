// AVX-512 matmul epilogue (gemm.h): y = act(alpha * y + bias + beta * C) on a finished tile.
//
// Activations follow ops/reference/access.h: relu keeps NaN; gelu = x/2 (1 + erf(x/sqrt2));
// gelu_tanh = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Accuracy (vs float64):
//  - exp: Cody-Waite reduction to |r| <= ln2/2 and the degree-7 Taylor polynomial
//    (truncation < 5e-9 relative), so ~2 ulp after f32 rounding; 0 below ln(FLT_MIN).
//  - 1 + erf(x/sqrt2) is evaluated as erfc(|x|/sqrt2) (or 2 - erfc) with Abramowitz & Stegun
//    7.1.26, erfc(z) = t P(t) exp(-z^2), t = 1 / (1 + 0.3275911 z): |error| <= 1.5e-7 absolute,
//    plus f32 rounding, so |gelu error| <= ~2e-7 * |x| + 1 ulp.
//  - tanh(u) = 1 - 2 / (1 + exp(2u)): absolute error ~1e-7, so |gelu_tanh error| ~1e-7 |x|.
// Both are far inside the matmul tolerance (1e-4 relative); infinities and NaN give what the
// formulas give in float64 (gelu(-inf) = NaN as -inf * 0, gelu(+inf) = +inf).
// GCC 12 false positive: the unmasked AVX-512 intrinsics pass _mm512_undefined_ps() (a
// self-initialised variable) as the pass-through operand, which -Wmaybe-uninitialized flags.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "cpu/gemm.h"

namespace longrun::cpu::gemm {
namespace {

inline __m512 exp_ps(__m512 x) {
  // Below ln(FLT_MIN) the result flushes to 0 (so erfc(inf) and exp(-inf) are exactly 0);
  // 88 keeps 2^n finite (n <= 127).
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33f), _CMP_LT_OQ);
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-87.33f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2 split so that n * kLn2Hi is exact for |n| <= 128.
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_mov_ps(__mmask16(~underflow), _mm512_scalef_ps(p, n));
}

// x/2 (1 + erf(x / sqrt2)).
inline __m512 gelu_erf_ps(__m512 x) {
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f),
                                 _mm512_fmadd_ps(z, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  const __m512 erfc =
      _mm512_mul_ps(_mm512_mul_ps(p, t), exp_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), z), z)));
  // 1 + erf(x/sqrt2) = erfc(z) for x < 0 and 2 - erfc(z) otherwise (no cancellation for x < 0).
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 one_plus_erf = _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(2.0f), erfc), erfc);
  return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), one_plus_erf);
}

inline __m512 gelu_tanh_ps(__m512 x) {
  const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  const __m512 u =
      _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), _mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x));
  // tanh(u) = 1 - 2 / (1 + exp(2u)); exp_ps clamps, so +-inf give +-1.
  const __m512 e = exp_ps(_mm512_add_ps(u, u));
  const __m512 th = _mm512_sub_ps(
      _mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), e)));
  return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), _mm512_add_ps(_mm512_set1_ps(1.0f), th));
}

inline __mmask16 lane_mask16(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(count, 0)) - 1u);
}

}  // namespace

void gemm_epilogue_f32_avx512(float* y, int64_t ldy, int64_t m, int64_t n, const Epilogue& e) {
  const __m512 alpha = _mm512_set1_ps(e.alpha), beta = _mm512_set1_ps(e.beta), zero = _mm512_setzero_ps();
  for (int64_t r = 0; r < m; ++r) {
    float* yr = y + r * ldy;
    const float* cr = e.c != nullptr ? e.c + r * e.ldc : nullptr;
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 mk = lane_mask16(n - j);
      __m512 v = _mm512_maskz_loadu_ps(mk, yr + j);
      v = e.bias != nullptr ? _mm512_fmadd_ps(alpha, v, _mm512_maskz_loadu_ps(mk, e.bias + j))
                            : _mm512_mul_ps(alpha, v);
      if (cr != nullptr) v = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(mk, cr + j), v);
      switch (e.act) {
        case Activation::none: break;
        case Activation::relu: v = _mm512_max_ps(zero, v); break;  // max(0, NaN) = NaN
        case Activation::gelu: v = gelu_erf_ps(v); break;
        case Activation::gelu_tanh: v = gelu_tanh_ps(v); break;
      }
      _mm512_mask_storeu_ps(yr + j, mk, v);
    }
  }
}

}  // namespace longrun::cpu::gemm
