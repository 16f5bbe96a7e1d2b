// The matmul epilogue (gemm.h): y = act(alpha * y + bias + beta * C) on a finished tile,
// written once against a vector struct V (vec_avx2.h / vec_avx512.h). Included only by
// epilogue_avx2.cpp / epilogue_avx512.cpp, which instantiate EpilogueKernels<Vec>.
//
// Activations follow ops/reference/access.h: relu keeps NaN; gelu = x/2 (1 + erf(x/sqrt2)) and
// gelu_tanh = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) are V::gelu / V::gelu_tanh, the
// same vector functions as the elementwise ops (error bounds in vmath_avx2.h: a few ulp, far
// inside the matmul tolerance of 1e-4 relative; gelu(-inf) = NaN as -inf * 0, gelu(+inf) =
// +inf).
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

  static void run(float* y, int64_t ldy, int64_t m, int64_t n, const Epilogue& e) {
    const T alpha = V::set1(e.alpha), beta = V::set1(e.beta), zero = V::zero();
    for (int64_t r = 0; r < m; ++r) {
      float* yr = y + r * ldy;
      const float* cr = e.c != nullptr ? e.c + r * e.ldc : nullptr;
      // Masked loads on every vector, not only the tail: a tile row is one or two vectors and
      // the tile's K loop dominates its time, so one code path for every vector costs nothing.
      for (int64_t j = 0; j < n; j += L) {
        const M mk = V::first_n(n - j);
        T v = V::load_n(yr + j, mk);
        v = e.bias != nullptr ? V::fmadd(alpha, v, V::load_n(e.bias + j, mk)) : V::mul(alpha, v);
        if (cr != nullptr) v = V::fmadd(beta, V::load_n(cr + j, mk), v);
        switch (e.act) {
          case Activation::none: break;
          case Activation::relu: v = V::max(zero, v); break;  // max(0, NaN) = NaN
          case Activation::gelu: v = V::gelu(v); break;
          case Activation::gelu_tanh: v = V::gelu_tanh(v); break;
        }
        V::store_n(yr + j, mk, v);
      }
    }
  }
};

}  // namespace
}  // namespace longrun::cpu::gemm
