// AVX2+FMA row primitives of softmax and layer_norm (see normalization.h for the contract);
// the same algorithms as normalization_avx512.cpp on 8 lanes.
#define LONGRUN_CPU_ISA_FILE
#include <immintrin.h>

#include <cstring>

#include "cpu/normalization.h"
#include "cpu/vmath_avx2.h"

namespace longrun::cpu {
namespace {

using namespace avx2;

constexpr int kLanes = 8;
alignas(32) constexpr int32_t kMaskWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
// Lanes [0, min(n, 8)) set.
__m256i lanes_below(int64_t n) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskWindow + 8 - (n < kLanes ? n : kLanes)));
}

// A function, not a namespace-scope constant: a static initializer would run AVX code at
// program start on any machine.
__m256 neg_inf() { return _mm256_set1_ps(-__builtin_inff()); }

// Horizontal reductions in a fixed order (halves, then pairs, then neighbours).
float hmax(__m256 v) {
  v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
  v = _mm256_max_ps(v, _mm256_permute_ps(v, 0x4e));
  v = _mm256_max_ps(v, _mm256_permute_ps(v, 0xb1));
  return _mm256_cvtss_f32(v);
}
float hsum(__m256 v) {
  v = _mm256_add_ps(v, _mm256_permute2f128_ps(v, v, 1));
  v = _mm256_add_ps(v, _mm256_permute_ps(v, 0x4e));
  v = _mm256_add_ps(v, _mm256_permute_ps(v, 0xb1));
  return _mm256_cvtss_f32(v);
}

// ---- softmax ------------------------------------------------------------------------------

// raw: no mask and scale 1 (the logits are x itself).
enum class MaskMode { raw, none, vector, scalar };

// Rows up to this many elements (64 KB) take the cached three-pass path.
constexpr int64_t kCachedRow = 16384;

// Logits of the 8 lanes at j.
template <MaskMode M>
__m256 logits(const float* x, const float* mask, __m256 scale, int64_t j) {
  const __m256 v = _mm256_loadu_ps(x + j);
  if constexpr (M == MaskMode::raw) return v;
  if constexpr (M == MaskMode::none) return _mm256_mul_ps(v, scale);
  if constexpr (M == MaskMode::vector) return _mm256_fmadd_ps(v, scale, _mm256_loadu_ps(mask + j));
  return _mm256_fmadd_ps(v, scale, _mm256_set1_ps(*mask));
}

// Logits of lanes [j, j + 8) where `k` is set; other lanes are -inf.
template <MaskMode M>
__m256 logits(const float* x, const float* mask, __m256 scale, int64_t j, __m256i k) {
  const __m256 v = _mm256_maskload_ps(x + j, k);
  __m256 l;
  if constexpr (M == MaskMode::raw) l = v;
  if constexpr (M == MaskMode::none) l = _mm256_mul_ps(v, scale);
  if constexpr (M == MaskMode::vector) l = _mm256_fmadd_ps(v, scale, _mm256_maskload_ps(mask + j, k));
  if constexpr (M == MaskMode::scalar) l = _mm256_fmadd_ps(v, scale, _mm256_set1_ps(*mask));
  return _mm256_blendv_ps(neg_inf(), l, _mm256_castsi256_ps(k));
}

struct Online {
  __m256 m = _mm256_set1_ps(-__builtin_inff());
  __m256 s = _mm256_setzero_ps();
};

// See normalization_avx512.cpp: one exp per element with exponent -|l - m|.
void update(Online& st, __m256 l) {
  const __m256 gt = _mm256_cmp_ps(l, st.m, _CMP_GT_OQ);
  const __m256 d = _mm256_or_ps(_mm256_sub_ps(l, st.m), _mm256_set1_ps(-0.0f));
  const __m256 keep = _mm256_cmp_ps(l, neg_inf(), _CMP_NEQ_UQ);  // -inf adds 0; NaN is kept
  const __m256 e = _mm256_and_ps(exp_neg_ps(d), keep);
  st.s = _mm256_blendv_ps(_mm256_add_ps(st.s, e), _mm256_fmadd_ps(st.s, e, _mm256_set1_ps(1.0f)), gt);
  st.m = _mm256_blendv_ps(st.m, l, gt);
}

__m256 rescale(__m256 m, __m256 big) {
  return _mm256_and_ps(exp_neg_ps(_mm256_sub_ps(m, big)), _mm256_cmp_ps(m, neg_inf(), _CMP_NEQ_UQ));
}

void fill_row(float* y, int64_t from, int64_t n, float v) {
  for (int64_t j = from; j < n; j += kLanes)
    _mm256_maskstore_ps(y + j, lanes_below(n - j), _mm256_set1_ps(v));
}

// The two strategies of normalization_avx512.cpp: online max + sum for long rows, three
// cached passes (max; exp and sum; scale) for rows that stay in cache.
template <MaskMode M>
void softmax_online(const float* x, const float* mask, __m256 scale, int64_t valid, int64_t n, float* y) {
  Online a, b;
  int64_t j = 0;
  for (; j + 2 * kLanes <= valid; j += 2 * kLanes) {
    update(a, logits<M>(x, mask, scale, j));
    update(b, logits<M>(x, mask, scale, j + kLanes));
  }
  for (; j < valid; j += kLanes) update(a, logits<M>(x, mask, scale, j, lanes_below(valid - j)));
  const __m256 mab = _mm256_max_ps(a.m, b.m);
  const __m256 sab = _mm256_fmadd_ps(a.s, rescale(a.m, mab), _mm256_mul_ps(b.s, rescale(b.m, mab)));
  const float big = hmax(mab);
  const float sum = hsum(_mm256_mul_ps(sab, rescale(mab, _mm256_set1_ps(big))));
  if (sum != sum || big == __builtin_inff())
    return fill_row(y, 0, n, __builtin_nanf(""));                // NaN or +inf logit
  if (big == -__builtin_inff()) return fill_row(y, 0, n, 0.0f);  // all -inf
  const __m256 vbig = _mm256_set1_ps(big), inv = _mm256_set1_ps(1.0f / sum);
  for (j = 0; j < valid; j += kLanes) {
    const __m256 p = _mm256_mul_ps(
        exp_neg_ps(_mm256_sub_ps(logits<M>(x, mask, scale, j, lanes_below(valid - j)), vbig)), inv);
    _mm256_maskstore_ps(y + j, lanes_below(n - j), p);  // lanes >= valid hold exp(-inf) = 0
  }
  fill_row(y, j, n, 0.0f);
}

template <MaskMode M>
void softmax_cached(const float* x, const float* mask, __m256 scale, int64_t valid, int64_t n, float* y) {
  __m256 m0 = neg_inf(), m1 = m0;
  int64_t j = 0;
  for (; j + 2 * kLanes <= valid; j += 2 * kLanes) {
    m0 = _mm256_max_ps(m0, logits<M>(x, mask, scale, j));
    m1 = _mm256_max_ps(m1, logits<M>(x, mask, scale, j + kLanes));
  }
  for (; j < valid; j += kLanes) m0 = _mm256_max_ps(m0, logits<M>(x, mask, scale, j, lanes_below(valid - j)));
  // max_ps may drop a NaN logit: then the sum below is NaN, unless every other logit is -inf.
  const float big = hmax(_mm256_max_ps(m0, m1));
  if (big == __builtin_inff()) return fill_row(y, 0, n, __builtin_nanf(""));
  if (big == -__builtin_inff()) {
    __m256 nan = _mm256_setzero_ps();
    for (j = 0; j < valid; j += kLanes) {
      const __m256 l = logits<M>(x, mask, scale, j, lanes_below(valid - j));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(l, l, _CMP_UNORD_Q));
    }
    return fill_row(y, 0, n, _mm256_movemask_ps(nan) != 0 ? __builtin_nanf("") : 0.0f);
  }
  const __m256 vbig = _mm256_set1_ps(big);
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  for (j = 0; j + 2 * kLanes <= valid; j += 2 * kLanes) {
    const __m256 e0 = exp_neg_ps(_mm256_sub_ps(logits<M>(x, mask, scale, j), vbig));
    const __m256 e1 = exp_neg_ps(_mm256_sub_ps(logits<M>(x, mask, scale, j + kLanes), vbig));
    _mm256_storeu_ps(y + j, e0);
    _mm256_storeu_ps(y + j + kLanes, e1);
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  for (; j < valid; j += kLanes) {
    const __m256 e = exp_neg_ps(_mm256_sub_ps(logits<M>(x, mask, scale, j, lanes_below(valid - j)), vbig));
    _mm256_maskstore_ps(y + j, lanes_below(n - j), e);
    s0 = _mm256_add_ps(s0, e);
  }
  const int64_t written = j;
  const float sum = hsum(_mm256_add_ps(s0, s1));
  if (sum != sum) return fill_row(y, 0, n, __builtin_nanf(""));  // a NaN logit
  const __m256 inv = _mm256_set1_ps(1.0f / sum);
  for (j = 0; j + kLanes <= valid; j += kLanes)
    _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(y + j), inv));
  if (j < valid) {
    const __m256i k = lanes_below(valid - j);
    _mm256_maskstore_ps(y + j, k, _mm256_mul_ps(_mm256_maskload_ps(y + j, k), inv));
  }
  fill_row(y, written, n, 0.0f);
}

template <MaskMode M>
void softmax_row_t(const float* x, const float* mask, float scale_f, int64_t valid, int64_t n, float* y) {
  const __m256 scale = _mm256_set1_ps(scale_f);
  if (valid <= kCachedRow) return softmax_cached<M>(x, mask, scale, valid, n, y);
  softmax_online<M>(x, mask, scale, valid, n, y);
}

void softmax_row(const float* x, const float* mask, int mask_step, float scale, int64_t valid, int64_t n,
                 float* y) {
  if (mask == nullptr && scale == 1.0f) return softmax_row_t<MaskMode::raw>(x, mask, scale, valid, n, y);
  if (mask == nullptr) return softmax_row_t<MaskMode::none>(x, mask, scale, valid, n, y);
  if (mask_step) return softmax_row_t<MaskMode::vector>(x, mask, scale, valid, n, y);
  return softmax_row_t<MaskMode::scalar>(x, mask, scale, valid, n, y);
}

// ---- layer_norm -----------------------------------------------------------------------------

struct Moments {
  __m256 n = _mm256_setzero_ps(), mean = _mm256_setzero_ps(), m2 = _mm256_setzero_ps();
};

// Chan et al.'s pairwise combination, lane by lane; empty lanes (n = 0) are neutral.
Moments merge(const Moments& a, const Moments& b) {
  Moments r;
  r.n = _mm256_add_ps(a.n, b.n);
  const __m256 f = _mm256_div_ps(b.n, _mm256_max_ps(r.n, _mm256_set1_ps(1.0f)));
  const __m256 delta = _mm256_sub_ps(b.mean, a.mean);
  r.mean = _mm256_fmadd_ps(delta, f, a.mean);
  r.m2 = _mm256_fmadd_ps(_mm256_mul_ps(delta, delta), _mm256_mul_ps(a.n, f), _mm256_add_ps(a.m2, b.m2));
  return r;
}

Moments permuted(const Moments& a, int which) {
  auto perm = [which](__m256 v) {
    switch (which) {
      case 0: return _mm256_permute2f128_ps(v, v, 1);  // swap 128-bit halves
      case 1: return _mm256_permute_ps(v, 0x4e);       // swap 64-bit pairs
      default: return _mm256_permute_ps(v, 0xb1);      // swap neighbours
    }
  };
  Moments r;
  r.n = perm(a.n), r.mean = perm(a.mean), r.m2 = perm(a.m2);
  return r;
}

// Lanes [j, j + min(8, d - j)) of gamma / beta as f32; zeros beyond.
template <ParamType T>
__m256 load_param(const void* p, int64_t j, int64_t d) {
  if constexpr (T == ParamType::f32)
    return _mm256_maskload_ps(static_cast<const float*>(p) + j, lanes_below(d - j));
  const uint16_t* h = static_cast<const uint16_t*>(p) + j;
  __m128i v;
  if (d - j >= kLanes) {
    v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
  } else {
    uint16_t buf[kLanes] = {};
    std::memcpy(buf, h, size_t(d - j) * sizeof(uint16_t));
    v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf));
  }
  if constexpr (T == ParamType::f16) return _mm256_cvtph_ps(v);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
}

template <ParamType G, ParamType B>
void layer_norm_rows_t(const float* x, float* y, int64_t rows, int64_t d, float eps, const void* gamma,
                       const void* beta) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t r = 0; r < rows; ++r, x += d, y += d) {
    const __m256 shift = _mm256_set1_ps(x[0]);  // see normalization_avx512.cpp
    Moments a, b;
    int64_t j = 0, k = 0;
    for (; j + 2 * kLanes <= d; j += 2 * kLanes) {
      const __m256 rk = _mm256_set1_ps(1.0f / float(++k));
      const __m256 x0 = _mm256_sub_ps(_mm256_loadu_ps(x + j), shift);
      const __m256 x1 = _mm256_sub_ps(_mm256_loadu_ps(x + j + kLanes), shift);
      const __m256 d0 = _mm256_sub_ps(x0, a.mean), d1 = _mm256_sub_ps(x1, b.mean);
      a.mean = _mm256_fmadd_ps(d0, rk, a.mean);
      b.mean = _mm256_fmadd_ps(d1, rk, b.mean);
      a.m2 = _mm256_fmadd_ps(d0, _mm256_sub_ps(x0, a.mean), a.m2);
      b.m2 = _mm256_fmadd_ps(d1, _mm256_sub_ps(x1, b.mean), b.m2);
    }
    a.n = b.n = _mm256_set1_ps(float(k));
    for (; j < d; j += kLanes) {
      const __m256i mi = lanes_below(d - j);
      const __m256 m = _mm256_castsi256_ps(mi);
      const __m256 xv = _mm256_sub_ps(_mm256_maskload_ps(x + j, mi), shift);
      a.n = _mm256_add_ps(a.n, _mm256_and_ps(m, one));
      const __m256 delta = _mm256_sub_ps(xv, a.mean);
      const __m256 mean = _mm256_add_ps(a.mean, _mm256_div_ps(delta, _mm256_max_ps(a.n, one)));
      a.mean = _mm256_blendv_ps(a.mean, mean, m);
      a.m2 = _mm256_blendv_ps(a.m2, _mm256_fmadd_ps(delta, _mm256_sub_ps(xv, a.mean), a.m2), m);
    }
    Moments t = merge(a, b);
    for (int step = 0; step < 3; ++step) t = merge(t, permuted(t, step));
    const float mean = _mm256_cvtss_f32(t.mean);
    const float var = _mm256_cvtss_f32(t.m2) / float(d);
    const __m256 vmean = _mm256_set1_ps(mean), inv = _mm256_set1_ps(1.0f / __builtin_sqrtf(var + eps));
    for (j = 0; j < d; j += kLanes) {
      const __m256i m = lanes_below(d - j);
      const __m256 xs = _mm256_sub_ps(_mm256_maskload_ps(x + j, m), shift);
      const __m256 xn = _mm256_mul_ps(_mm256_sub_ps(xs, vmean), inv);
      _mm256_maskstore_ps(y + j, m,
                          _mm256_fmadd_ps(xn, load_param<G>(gamma, j, d), load_param<B>(beta, j, d)));
    }
  }
}

template <ParamType G>
void layer_norm_rows_g(const float* x, float* y, int64_t rows, int64_t d, float eps, const void* gamma,
                       const void* beta, ParamType bt) {
  switch (bt) {
    case ParamType::f32: return layer_norm_rows_t<G, ParamType::f32>(x, y, rows, d, eps, gamma, beta);
    case ParamType::f16: return layer_norm_rows_t<G, ParamType::f16>(x, y, rows, d, eps, gamma, beta);
    case ParamType::bf16: return layer_norm_rows_t<G, ParamType::bf16>(x, y, rows, d, eps, gamma, beta);
  }
}

void layer_norm_rows(const float* x, float* y, int64_t rows, int64_t d, float eps, const void* gamma,
                     ParamType gt, const void* beta, ParamType bt) {
  switch (gt) {
    case ParamType::f32: return layer_norm_rows_g<ParamType::f32>(x, y, rows, d, eps, gamma, beta, bt);
    case ParamType::f16: return layer_norm_rows_g<ParamType::f16>(x, y, rows, d, eps, gamma, beta, bt);
    case ParamType::bf16: return layer_norm_rows_g<ParamType::bf16>(x, y, rows, d, eps, gamma, beta, bt);
  }
}

}  // namespace

const NormalizationIsa kNormalizationAvx2 = {&softmax_row, &layer_norm_rows};

}  // namespace longrun::cpu
