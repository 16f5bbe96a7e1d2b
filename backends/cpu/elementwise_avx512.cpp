// AVX-512 row primitives of the elementwise kernels (see elementwise.h): 16 lanes, tails
// under a lane mask so that every element goes through the same instructions.
#define LONGRUN_CPU_ISA_FILE
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 flags its own _mm512_undefined_* inside the AVX-512 intrinsic headers (GCC PR 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "cpu/elementwise.h"
#include "cpu/vmath_avx512.h"

namespace longrun::cpu {
namespace {

using namespace avx512;

__mmask16 tail_mask(int64_t n) { return __mmask16((1u << n) - 1u); }

template <BinaryOp Op>
__m512 apply(__m512 a, __m512 b) {
  if constexpr (Op == BinaryOp::add) return _mm512_add_ps(a, b);
  if constexpr (Op == BinaryOp::sub) return _mm512_sub_ps(a, b);
  return _mm512_mul_ps(a, b);
}

// SA / SB: 1 = vector operand, 0 = broadcast scalar.
template <BinaryOp Op, int SA, int SB>
void binary_loop(const float* a, const float* b, float* y, int64_t n) {
  const __m512 sa = SA ? _mm512_setzero_ps() : _mm512_set1_ps(*a);
  const __m512 sb = SB ? _mm512_setzero_ps() : _mm512_set1_ps(*b);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a0 = SA ? _mm512_loadu_ps(a + i) : sa, a1 = SA ? _mm512_loadu_ps(a + i + 16) : sa;
    const __m512 b0 = SB ? _mm512_loadu_ps(b + i) : sb, b1 = SB ? _mm512_loadu_ps(b + i + 16) : sb;
    _mm512_storeu_ps(y + i, apply<Op>(a0, b0));
    _mm512_storeu_ps(y + i + 16, apply<Op>(a1, b1));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 va = SA ? _mm512_maskz_loadu_ps(m, a + i) : sa;
    const __m512 vb = SB ? _mm512_maskz_loadu_ps(m, b + i) : sb;
    _mm512_mask_storeu_ps(y + i, m, apply<Op>(va, vb));
  }
}

template <BinaryOp Op>
void binary_op(const float* a, int sa, const float* b, int sb, float* y, int64_t n) {
  if (sa && sb) return binary_loop<Op, 1, 1>(a, b, y, n);
  if (sa) return binary_loop<Op, 1, 0>(a, b, y, n);
  if (sb) return binary_loop<Op, 0, 1>(a, b, y, n);
  return binary_loop<Op, 0, 0>(a, b, y, n);
}

void binary(BinaryOp op, const float* a, int sa, const float* b, int sb, float* y, int64_t n) {
  switch (op) {
    case BinaryOp::add: return binary_op<BinaryOp::add>(a, sa, b, sb, y, n);
    case BinaryOp::sub: return binary_op<BinaryOp::sub>(a, sa, b, sb, y, n);
    case BinaryOp::mul: return binary_op<BinaryOp::mul>(a, sa, b, sb, y, n);
  }
}

// relu keeps NaN (as the reference) and maps -0 to +0: x where x > 0 or unordered, else +0.
__m512 relu_ps(__m512 x) {
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NLE_UQ), x);
}

template <UnaryOp Op>
__m512 unary_ps(__m512 x, __m512 p0, __m512 p1) {
  if constexpr (Op == UnaryOp::scale) return _mm512_fmadd_ps(x, p0, p1);
  if constexpr (Op == UnaryOp::exp) return exp_ps(x);
  if constexpr (Op == UnaryOp::tanh) return tanh_ps(x);
  if constexpr (Op == UnaryOp::relu) return relu_ps(x);
  if constexpr (Op == UnaryOp::gelu) return gelu_ps(x);
  return gelu_tanh_ps(x);
}

template <UnaryOp Op>
void unary_loop(const float* x, float* y, int64_t n, float s0, float s1) {
  const __m512 p0 = _mm512_set1_ps(s0), p1 = _mm512_set1_ps(s1);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
    _mm512_storeu_ps(y + i, unary_ps<Op>(x0, p0, p1));
    _mm512_storeu_ps(y + i + 16, unary_ps<Op>(x1, p0, p1));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, unary_ps<Op>(_mm512_maskz_loadu_ps(m, x + i), p0, p1));
  }
}

void unary(UnaryOp op, const float* x, float* y, int64_t n, float p0, float p1) {
  switch (op) {
    case UnaryOp::scale: return unary_loop<UnaryOp::scale>(x, y, n, p0, p1);
    case UnaryOp::exp: return unary_loop<UnaryOp::exp>(x, y, n, p0, p1);
    case UnaryOp::tanh: return unary_loop<UnaryOp::tanh>(x, y, n, p0, p1);
    case UnaryOp::relu: return unary_loop<UnaryOp::relu>(x, y, n, p0, p1);
    case UnaryOp::gelu: return unary_loop<UnaryOp::gelu>(x, y, n, p0, p1);
    case UnaryOp::gelu_tanh: return unary_loop<UnaryOp::gelu_tanh>(x, y, n, p0, p1);
  }
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    const __m256i h =
        _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(y + i, m, h);
  }
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
  }
}

// Round to nearest even on the upper 16 bits; NaN keeps its top bits and is made quiet
// (the rule of f32_to_bf16 in dtype.h).
void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i round = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1),
                quiet = _mm512_set1_epi32(0x40);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    const __m512i bias = _mm512_add_epi32(round, _mm512_and_si512(_mm512_srli_epi32(u, 16), one));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    const __m512i r = _mm512_mask_or_epi32(rounded, nan, _mm512_srli_epi32(u, 16), quiet);
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(r));
  }
}

void bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}

}  // namespace

const ElementwiseIsa kElementwiseAvx512 = {&binary,     &unary,       &f32_to_f16,
                                           &f16_to_f32, &f32_to_bf16, &bf16_to_f32};

}  // namespace longrun::cpu
