// AVX2 matmul epilogue (gemm.h), the same math as epilogue_avx512.cpp: y = act(alpha * y + bias + beta * C)
// on a finished tile.
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
#include <immintrin.h>

#include <algorithm>

#include "cpu/gemm.h"

namespace longrun::cpu::gemm {
namespace {

inline __m256 exp_ps(__m256 x) {
  // Below ln(FLT_MIN) the result flushes to 0 (so erfc(inf) and exp(-inf) are exactly 0);
  // 88 keeps 2^n finite (n <= 127).
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33f), _CMP_LT_OQ);
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.0f)), _mm256_set1_ps(-87.33f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2 split so that n * kLn2Hi is exact for |n| <= 128.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n from the exponent bits: n is in [-126, 127] after the clamp.
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

// x/2 (1 + erf(x / sqrt2)).
inline __m256 gelu_erf_ps(__m256 x) {
  const __m256 abs_x = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 z =
      _mm256_min_ps(_mm256_mul_ps(abs_x, _mm256_set1_ps(0.70710678118654752f)), _mm256_set1_ps(10.0f));
  const __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
                                 _mm256_fmadd_ps(z, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  const __m256 erfc =
      _mm256_mul_ps(_mm256_mul_ps(p, t), exp_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), z), z)));
  // 1 + erf(x/sqrt2) = erfc(z) for x < 0 and 2 - erfc(z) otherwise (no cancellation for x < 0).
  const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 one_plus_erf = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), erfc), erfc, neg);
  return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), one_plus_erf);
}

inline __m256 gelu_tanh_ps(__m256 x) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 u =
      _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f), _mm256_fmadd_ps(x3, _mm256_set1_ps(0.044715f), x));
  // tanh(u) = 1 - 2 / (1 + exp(2u)); exp_ps clamps, so +-inf give +-1.
  const __m256 e = exp_ps(_mm256_add_ps(u, u));
  const __m256 th = _mm256_sub_ps(
      _mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e)));
  return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), _mm256_add_ps(_mm256_set1_ps(1.0f), th));
}

inline __m256i lane_mask8(int64_t count) {
  alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - std::min<int64_t>(count, 8)));
}

}  // namespace

void gemm_epilogue_f32_avx2(float* y, int64_t ldy, int64_t m, int64_t n, const Epilogue& e) {
  const __m256 alpha = _mm256_set1_ps(e.alpha), beta = _mm256_set1_ps(e.beta), zero = _mm256_setzero_ps();
  for (int64_t r = 0; r < m; ++r) {
    float* yr = y + r * ldy;
    const float* cr = e.c != nullptr ? e.c + r * e.ldc : nullptr;
    for (int64_t j = 0; j < n; j += 8) {
      const __m256i mk = lane_mask8(n - j);
      __m256 v = _mm256_maskload_ps(yr + j, mk);
      v = e.bias != nullptr ? _mm256_fmadd_ps(alpha, v, _mm256_maskload_ps(e.bias + j, mk))
                            : _mm256_mul_ps(alpha, v);
      if (cr != nullptr) v = _mm256_fmadd_ps(beta, _mm256_maskload_ps(cr + j, mk), v);
      switch (e.act) {
        case Activation::none: break;
        case Activation::relu: v = _mm256_max_ps(zero, v); break;  // max(0, NaN) = NaN
        case Activation::gelu: v = gelu_erf_ps(v); break;
        case Activation::gelu_tanh: v = gelu_tanh_ps(v); break;
      }
      _mm256_maskstore_ps(yr + j, mk, v);
    }
  }
}

}  // namespace longrun::cpu::gemm
