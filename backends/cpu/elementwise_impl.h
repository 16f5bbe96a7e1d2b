// The elementwise row primitives (contract in elementwise.h), written once against a vector
// struct V (vec_avx2.h / vec_avx512.h): two vectors per step, then one, then the tail under a
// lane mask, so every element goes through the same instructions. Included only by
// elementwise_avx2.cpp / elementwise_avx512.cpp, which instantiate ElementwiseKernels<Vec>.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/elementwise.h"

namespace longrun::cpu {
namespace {  // internal linkage: each ISA file owns its instantiations

template <class V>
struct ElementwiseKernels {
  using T = typename V::T;
  using M = typename V::M;
  static constexpr int L = V::L;

  template <BinaryOp Op>
  static T apply(T a, T b) {
    if constexpr (Op == BinaryOp::add) return V::add(a, b);
    if constexpr (Op == BinaryOp::sub) return V::sub(a, b);
    return V::mul(a, b);
  }

  // SA / SB: 1 = vector operand, 0 = broadcast scalar. kStream: the elements before y's
  // first vector boundary under a mask, then whole vectors with non-temporal stores.
  template <BinaryOp Op, int SA, int SB, bool kStream>
  static void binary_loop(const float* a, const float* b, float* y, int64_t n) {
    const T sa = SA ? V::zero() : V::set1(*a);
    const T sb = SB ? V::zero() : V::set1(*b);
    auto part = [&](int64_t i, int64_t count) {
      const M m = V::first_n(count);
      const T va = SA ? V::load_n(a + i, m) : sa;
      const T vb = SB ? V::load_n(b + i, m) : sb;
      V::store_n(y + i, m, apply<Op>(va, vb));
    };
    int64_t i = 0;
    if constexpr (kStream) {
      constexpr int64_t kBytes = L * int64_t(sizeof(float));
      i = std::min(n, (kBytes - int64_t(reinterpret_cast<uintptr_t>(y) % kBytes)) % kBytes / 4);
      if (i > 0) part(0, i);
      for (; i + 2 * L <= n; i += 2 * L) {
        const T a0 = SA ? V::load(a + i) : sa, a1 = SA ? V::load(a + i + L) : sa;
        const T b0 = SB ? V::load(b + i) : sb, b1 = SB ? V::load(b + i + L) : sb;
        V::stream(y + i, apply<Op>(a0, b0));
        V::stream(y + i + L, apply<Op>(a1, b1));
      }
      _mm_sfence();
    }
    for (; i + 2 * L <= n; i += 2 * L) {
      const T a0 = SA ? V::load(a + i) : sa, a1 = SA ? V::load(a + i + L) : sa;
      const T b0 = SB ? V::load(b + i) : sb, b1 = SB ? V::load(b + i + L) : sb;
      V::store(y + i, apply<Op>(a0, b0));
      V::store(y + i + L, apply<Op>(a1, b1));
    }
    for (; i + L <= n; i += L) {
      const T va = SA ? V::load(a + i) : sa;
      const T vb = SB ? V::load(b + i) : sb;
      V::store(y + i, apply<Op>(va, vb));
    }
    if (i < n) part(i, n - i);
  }

  template <BinaryOp Op, bool kStream>
  static void binary_op(const float* a, int sa, const float* b, int sb, float* y, int64_t n) {
    if (sa && sb) return binary_loop<Op, 1, 1, kStream>(a, b, y, n);
    if (sa) return binary_loop<Op, 1, 0, kStream>(a, b, y, n);
    if (sb) return binary_loop<Op, 0, 1, kStream>(a, b, y, n);
    return binary_loop<Op, 0, 0, kStream>(a, b, y, n);
  }

  template <BinaryOp Op>
  static void binary_op(const float* a, int sa, const float* b, int sb, float* y, int64_t n, bool stream) {
    if (stream) return binary_op<Op, true>(a, sa, b, sb, y, n);
    binary_op<Op, false>(a, sa, b, sb, y, n);
  }

  static void binary(BinaryOp op, const float* a, int sa, const float* b, int sb, float* y, int64_t n,
                     bool stream) {
    switch (op) {
      case BinaryOp::add: return binary_op<BinaryOp::add>(a, sa, b, sb, y, n, stream);
      case BinaryOp::sub: return binary_op<BinaryOp::sub>(a, sa, b, sb, y, n, stream);
      case BinaryOp::mul: return binary_op<BinaryOp::mul>(a, sa, b, sb, y, n, stream);
    }
  }

  // relu keeps NaN (as the reference) and maps -0 to +0: x where x > 0 or unordered, else +0.
  static T relu(T x) { return V::keep(V::nle_uq(x, V::zero()), x); }

  template <UnaryOp Op>
  static T unary_v(T x, T p0, T p1) {
    if constexpr (Op == UnaryOp::scale) return V::fmadd(x, p0, p1);
    if constexpr (Op == UnaryOp::exp) return V::exp(x);
    if constexpr (Op == UnaryOp::tanh) return V::tanh(x);
    if constexpr (Op == UnaryOp::relu) return relu(x);
    if constexpr (Op == UnaryOp::gelu) return V::gelu(x);
    return V::gelu_tanh(x);
  }

  // No software prefetch (unlike softmax's exp pass, normalization_impl.h): the input is read
  // once, in order, which the hardware prefetchers follow.
  template <UnaryOp Op>
  static void unary_loop(const float* x, float* y, int64_t n, float s0, float s1) {
    const T p0 = V::set1(s0), p1 = V::set1(s1);
    int64_t i = 0;
    if constexpr (Op == UnaryOp::gelu) {
      // Four vectors side by side (V::gelu of an array): four independent dependency chains
      // hide the latency of each vector's chain of dependent FMAs.
      for (; i + 4 * L <= n; i += 4 * L) {
        T v[4] = {V::load(x + i), V::load(x + i + L), V::load(x + i + 2 * L), V::load(x + i + 3 * L)};
        V::gelu(v);
        for (int w = 0; w < 4; ++w) V::store(y + i + w * L, v[w]);
      }
    }
    for (; i + 2 * L <= n; i += 2 * L) {
      const T x0 = V::load(x + i), x1 = V::load(x + i + L);
      V::store(y + i, unary_v<Op>(x0, p0, p1));
      V::store(y + i + L, unary_v<Op>(x1, p0, p1));
    }
    for (; i + L <= n; i += L) V::store(y + i, unary_v<Op>(V::load(x + i), p0, p1));
    if (i < n) {
      const M m = V::first_n(n - i);
      V::store_n(y + i, m, unary_v<Op>(V::load_n(x + i, m), p0, p1));
    }
  }

  static void unary(UnaryOp op, const float* x, float* y, int64_t n, float p0, float p1) {
    switch (op) {
      case UnaryOp::scale: return unary_loop<UnaryOp::scale>(x, y, n, p0, p1);
      case UnaryOp::exp: return unary_loop<UnaryOp::exp>(x, y, n, p0, p1);
      case UnaryOp::tanh: return unary_loop<UnaryOp::tanh>(x, y, n, p0, p1);
      case UnaryOp::relu: return unary_loop<UnaryOp::relu>(x, y, n, p0, p1);
      case UnaryOp::gelu: return unary_loop<UnaryOp::gelu>(x, y, n, p0, p1);
      case UnaryOp::gelu_tanh: return unary_loop<UnaryOp::gelu_tanh>(x, y, n, p0, p1);
    }
  }

  // Conversions: whole vectors, then the tail under a mask (V decides how: a k-mask move, or
  // a zero-padded copy where the ISA has no 16-bit masked move).
  static void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
    int64_t i = 0;
    for (; i + L <= n; i += L) V::store_u16(y + i, V::narrow_f16(V::load(x + i)));
    if (i < n) {
      const M m = V::first_n(n - i);
      V::store_u16_n(y + i, n - i, m, V::narrow_f16(V::load_n(x + i, m)));
    }
  }

  static void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + L <= n; i += L) V::store(y + i, V::widen_f16(V::load_u16(x + i)));
    if (i < n) {
      const M m = V::first_n(n - i);
      V::store_n(y + i, m, V::widen_f16(V::load_u16_n(x + i, n - i, m)));
    }
  }

  static void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
    int64_t i = 0;
    for (; i + L <= n; i += L) V::store_u16(y + i, V::narrow_bf16(V::load(x + i)));
    if (i < n) {
      const M m = V::first_n(n - i);
      V::store_u16_n(y + i, n - i, m, V::narrow_bf16(V::load_n(x + i, m)));
    }
  }

  static void bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + L <= n; i += L) V::store(y + i, V::widen_bf16(V::load_u16(x + i)));
    if (i < n) {
      const M m = V::first_n(n - i);
      V::store_n(y + i, m, V::widen_bf16(V::load_u16_n(x + i, n - i, m)));
    }
  }

  static constexpr ElementwiseIsa kTable = {&binary,     &unary,       &f32_to_f16,
                                            &f16_to_f32, &f32_to_bf16, &bf16_to_f32};
};

}  // namespace
}  // namespace longrun::cpu
