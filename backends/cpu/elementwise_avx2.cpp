// AVX2+FMA row primitives of the elementwise kernels (see elementwise.h): 8 lanes, tails
// through masked loads/stores (or a padded local block for 16-bit data) so that every
// element goes through the same instructions.
#define LONGRUN_CPU_ISA_FILE
#include <immintrin.h>

#include <cstring>

#include "cpu/elementwise.h"
#include "cpu/vmath_avx2.h"

namespace longrun::cpu {
namespace {

using namespace avx2;

alignas(32) constexpr int32_t kMaskWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
// Lanes [0, r) set, 0 < r <= 8.
__m256i tail_mask(int64_t r) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskWindow + 8 - r));
}

template <BinaryOp Op>
__m256 apply(__m256 a, __m256 b) {
  if constexpr (Op == BinaryOp::add) return _mm256_add_ps(a, b);
  if constexpr (Op == BinaryOp::sub) return _mm256_sub_ps(a, b);
  return _mm256_mul_ps(a, b);
}

template <BinaryOp Op, int SA, int SB>
void binary_loop(const float* a, const float* b, float* y, int64_t n) {
  const __m256 sa = SA ? _mm256_setzero_ps() : _mm256_set1_ps(*a);
  const __m256 sb = SB ? _mm256_setzero_ps() : _mm256_set1_ps(*b);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a0 = SA ? _mm256_loadu_ps(a + i) : sa, a1 = SA ? _mm256_loadu_ps(a + i + 8) : sa;
    const __m256 b0 = SB ? _mm256_loadu_ps(b + i) : sb, b1 = SB ? _mm256_loadu_ps(b + i + 8) : sb;
    _mm256_storeu_ps(y + i, apply<Op>(a0, b0));
    _mm256_storeu_ps(y + i + 8, apply<Op>(a1, b1));
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 va = SA ? _mm256_loadu_ps(a + i) : sa;
    const __m256 vb = SB ? _mm256_loadu_ps(b + i) : sb;
    _mm256_storeu_ps(y + i, apply<Op>(va, vb));
  }
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    const __m256 va = SA ? _mm256_maskload_ps(a + i, m) : sa;
    const __m256 vb = SB ? _mm256_maskload_ps(b + i, m) : sb;
    _mm256_maskstore_ps(y + i, m, apply<Op>(va, vb));
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
__m256 relu_ps(__m256 x) { return _mm256_and_ps(x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NLE_UQ)); }

template <UnaryOp Op>
__m256 unary_ps(__m256 x, __m256 p0, __m256 p1) {
  if constexpr (Op == UnaryOp::scale) return _mm256_fmadd_ps(x, p0, p1);
  if constexpr (Op == UnaryOp::exp) return exp_ps(x);
  if constexpr (Op == UnaryOp::tanh) return tanh_ps(x);
  if constexpr (Op == UnaryOp::relu) return relu_ps(x);
  if constexpr (Op == UnaryOp::gelu) return gelu_ps(x);
  return gelu_tanh_ps(x);
}

template <UnaryOp Op>
void unary_loop(const float* x, float* y, int64_t n, float s0, float s1) {
  const __m256 p0 = _mm256_set1_ps(s0), p1 = _mm256_set1_ps(s1);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
    _mm256_storeu_ps(y + i, unary_ps<Op>(x0, p0, p1));
    _mm256_storeu_ps(y + i + 8, unary_ps<Op>(x1, p0, p1));
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, unary_ps<Op>(_mm256_loadu_ps(x + i), p0, p1));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, unary_ps<Op>(_mm256_maskload_ps(x + i, m), p0, p1));
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

// 8-element conversion blocks; the last partial block goes through a zero-padded copy.
template <typename In, typename Out, typename Block>
void convert(const In* x, Out* y, int64_t n, Block block) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) block(x + i, y + i);
  if (i < n) {
    In xin[8] = {};
    Out yout[8];
    std::memcpy(xin, x + i, size_t(n - i) * sizeof(In));
    block(xin, yout);
    std::memcpy(y + i, yout, size_t(n - i) * sizeof(Out));
  }
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  convert(x, y, n, [](const float* in, uint16_t* out) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), h);
  });
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  convert(x, y, n, [](const uint16_t* in, float* out) {
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
  });
}

// Round to nearest even on the upper 16 bits; NaN keeps its top bits and is made quiet
// (the rule of f32_to_bf16 in dtype.h).
void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  convert(x, y, n, [](const float* in, uint16_t* out) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(in));
    const __m256i nan =
        _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                          _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    const __m256i quieted = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256i r = _mm256_blendv_epi8(rounded, quieted, nan);
    // Values fit 16 bits, so the saturating pack is exact; fix the 128-bit lane order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
  });
}

void bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
  convert(x, y, n, [](const uint16_t* in, float* out) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
    _mm256_storeu_ps(out, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  });
}

}  // namespace

const ElementwiseIsa kElementwiseAvx2 = {&binary,     &unary,       &f32_to_f16,
                                         &f16_to_f32, &f32_to_bf16, &bf16_to_f32};

}  // namespace longrun::cpu
