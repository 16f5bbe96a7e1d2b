// The matmul epilogue (gemm.h): y = act(alpha * y + bias + beta * C) on a finished tile,
// written once against a vector struct V (vec_avx2.h / vec_avx512.h). Included only by
// epilogue_avx2.cpp / epilogue_avx512.cpp, which instantiate EpilogueKernels<Vec>.
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
#pragma once

#include <cstdint>

#include "cpu/gemm.h"

namespace longrun::cpu::gemm {
namespace {  // internal linkage: each ISA file owns its instantiations

template <class V>
struct EpilogueKernels {
  using T = typename V::T;
  using M = typename V::M;
  static constexpr int L = V::L;

  static T exp(T x) {
    // Below ln(FLT_MIN) the result flushes to 0 (so erfc(inf) and exp(-inf) are exactly 0);
    // 88 keeps 2^n finite (n <= 127).
    const M underflow = V::lt(x, V::set1(-87.33f));
    x = V::max(V::min(x, V::set1(88.0f)), V::set1(-87.33f));
    const T n = V::round_nearest(V::mul(x, V::set1(1.44269504088896341f)));
    // ln2 split so that n * kLn2Hi is exact for |n| <= 128.
    T r = V::fnmadd(n, V::set1(0.693359375f), x);
    r = V::fnmadd(n, V::set1(-2.12194440e-4f), r);
    T p = V::set1(1.0f / 5040.0f);
    p = V::fmadd(p, r, V::set1(1.0f / 720.0f));
    p = V::fmadd(p, r, V::set1(1.0f / 120.0f));
    p = V::fmadd(p, r, V::set1(1.0f / 24.0f));
    p = V::fmadd(p, r, V::set1(1.0f / 6.0f));
    p = V::fmadd(p, r, V::set1(0.5f));
    p = V::fmadd(p, r, V::set1(1.0f));
    p = V::fmadd(p, r, V::set1(1.0f));
    return V::zero_where(underflow, V::mul_pow2(p, n));  // n is in [-126, 127] after the clamp
  }

  // x/2 (1 + erf(x / sqrt2)). Large z need no clamp: exp(-z^2) flushes to 0 from z = 9.35
  // on (-inf included), and t P(t) stays finite.
  static T gelu_erf(T x) {
    const T z = V::mul(V::abs(x), V::set1(0.70710678118654752f));
    const T t = V::div(V::set1(1.0f), V::fmadd(z, V::set1(0.3275911f), V::set1(1.0f)));
    T p = V::set1(1.061405429f);
    p = V::fmadd(p, t, V::set1(-1.453152027f));
    p = V::fmadd(p, t, V::set1(1.421413741f));
    p = V::fmadd(p, t, V::set1(-0.284496736f));
    p = V::fmadd(p, t, V::set1(0.254829592f));
    const T erfc = V::mul(V::mul(p, t), exp(V::mul(V::sub(V::zero(), z), z)));
    // 1 + erf(x/sqrt2) = erfc(z) for x < 0 and 2 - erfc(z) otherwise (no cancellation for x < 0).
    const T one_plus_erf = V::blend(V::lt(x, V::zero()), V::sub(V::set1(2.0f), erfc), erfc);
    return V::mul(V::mul(x, V::set1(0.5f)), one_plus_erf);
  }

  static T gelu_tanh(T x) {
    const T x3 = V::mul(V::mul(x, x), x);
    const T u = V::mul(V::set1(0.7978845608028654f), V::fmadd(x3, V::set1(0.044715f), x));
    // tanh(u) = 1 - 2 / (1 + exp(2u)); exp clamps, so +-inf give +-1.
    const T e = exp(V::add(u, u));
    const T th = V::sub(V::set1(1.0f), V::div(V::set1(2.0f), V::add(V::set1(1.0f), e)));
    return V::mul(V::mul(x, V::set1(0.5f)), V::add(V::set1(1.0f), th));
  }

  static void run(float* y, int64_t ldy, int64_t m, int64_t n, const Epilogue& e) {
    const T alpha = V::set1(e.alpha), beta = V::set1(e.beta), zero = V::zero();
    for (int64_t r = 0; r < m; ++r) {
      float* yr = y + r * ldy;
      const float* cr = e.c != nullptr ? e.c + r * e.ldc : nullptr;
      // Masked loads on every vector, not only the tail: plain loads for whole vectors made no
      // difference (session 18, Zen 3: whole models, alternating runs in one process, 0.92-1.09
      // of the time; an AVX2 tile has two vectors per row, and its K loop dominates).
      for (int64_t j = 0; j < n; j += L) {
        const M mk = V::first_n(n - j);
        T v = V::load_n(yr + j, mk);
        v = e.bias != nullptr ? V::fmadd(alpha, v, V::load_n(e.bias + j, mk)) : V::mul(alpha, v);
        if (cr != nullptr) v = V::fmadd(beta, V::load_n(cr + j, mk), v);
        switch (e.act) {
          case Activation::none: break;
          case Activation::relu: v = V::max(zero, v); break;  // max(0, NaN) = NaN
          case Activation::gelu: v = gelu_erf(v); break;
          case Activation::gelu_tanh: v = gelu_tanh(v); break;
        }
        V::store_n(yr + j, mk, v);
      }
    }
  }
};

}  // namespace
}  // namespace longrun::cpu::gemm
