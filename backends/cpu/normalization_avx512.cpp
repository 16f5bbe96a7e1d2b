// AVX-512 row primitives of softmax and layer_norm (see normalization.h for the contract).
#define LONGRUN_CPU_ISA_FILE
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 flags its own _mm512_undefined_* inside the AVX-512 intrinsic headers (GCC PR 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "cpu/normalization.h"
#include "cpu/vmath_avx512.h"

namespace longrun::cpu {
namespace {

using namespace avx512;

constexpr int kLanes = 16;
__mmask16 lanes_below(int64_t n) { return n >= kLanes ? __mmask16(0xffff) : __mmask16((1u << n) - 1u); }

// ---- softmax ------------------------------------------------------------------------------

// raw: no mask and scale 1 (the logits are x itself).
enum class MaskMode { raw, none, vector, scalar };

// Rows up to this many elements (64 KB) take the cached three-pass path.
constexpr int64_t kCachedRow = 16384;

// Logits of lanes [j, j + 16) where `k` is set; other lanes are -inf.
template <MaskMode M>
__m512 logits(const float* x, const float* mask, __m512 scale, int64_t j, __mmask16 k) {
  const __m512 v = _mm512_maskz_loadu_ps(k, x + j);
  __m512 l;
  if constexpr (M == MaskMode::raw) l = v;
  if constexpr (M == MaskMode::none) l = _mm512_mul_ps(v, scale);
  if constexpr (M == MaskMode::vector) l = _mm512_fmadd_ps(v, scale, _mm512_maskz_loadu_ps(k, mask + j));
  if constexpr (M == MaskMode::scalar) l = _mm512_fmadd_ps(v, scale, _mm512_set1_ps(*mask));
  return _mm512_mask_blend_ps(k, _mm512_set1_ps(-__builtin_inff()), l);
}

// Per-lane online softmax state: running max m and s = sum of exp(l - m) so far.
struct Online {
  __m512 m = _mm512_set1_ps(-__builtin_inff());
  __m512 s = _mm512_setzero_ps();
};

// One exp per element: if l > m the old sum is rescaled by exp(m - l) and l adds 1,
// otherwise l adds exp(l - m); either way the exponent is -|l - m|. A -inf logit adds 0
// (also when m is still -inf); a NaN logit makes s NaN, which the row check turns into a
// NaN row; m never becomes NaN.
void update(Online& st, __m512 l) {
  const __mmask16 gt = _mm512_cmp_ps_mask(l, st.m, _CMP_GT_OQ);
  const __m512 d = _mm512_or_ps(_mm512_sub_ps(l, st.m), _mm512_set1_ps(-0.0f));
  const __mmask16 zero = _mm512_cmp_ps_mask(l, _mm512_set1_ps(-__builtin_inff()), _CMP_EQ_OQ);
  const __m512 e = _mm512_mask_mov_ps(exp_neg_ps(d), zero, _mm512_setzero_ps());
  st.s = _mm512_mask_fmadd_ps(st.s, gt, e, _mm512_set1_ps(1.0f));
  st.s = _mm512_mask_add_ps(st.s, __mmask16(~gt), st.s, e);
  st.m = _mm512_mask_mov_ps(st.m, gt, l);
}

// exp(m - M) where m may be -inf (weight 0, also when M is -inf too).
__m512 rescale(__m512 m, __m512 big) {
  const __mmask16 empty = _mm512_cmp_ps_mask(m, _mm512_set1_ps(-__builtin_inff()), _CMP_EQ_OQ);
  return _mm512_mask_mov_ps(exp_neg_ps(_mm512_sub_ps(m, big)), empty, _mm512_setzero_ps());
}

void fill_row(float* y, int64_t from, int64_t n, float v) {
  for (int64_t j = from; j < n; j += kLanes)
    _mm512_mask_storeu_ps(y + j, lanes_below(n - j), _mm512_set1_ps(v));
}

// Long rows: online max + sum in one pass over x (two chains), then y = exp(l - max) / sum.
// Two exps per element, but x is read only twice whatever the row length.
template <MaskMode M>
void softmax_online(const float* x, const float* mask, __m512 scale, int64_t valid, int64_t n, float* y) {
  Online a, b;  // two independent chains (even / odd vectors)
  int64_t j = 0;
  for (; j + 2 * kLanes <= valid; j += 2 * kLanes) {
    update(a, logits<M>(x, mask, scale, j, 0xffff));
    update(b, logits<M>(x, mask, scale, j + kLanes, 0xffff));
  }
  for (; j < valid; j += kLanes) update(a, logits<M>(x, mask, scale, j, lanes_below(valid - j)));
  // Merge the chains lane by lane, then the lanes (fixed orders: deterministic).
  const __m512 mab = _mm512_max_ps(a.m, b.m);
  const __m512 sab = _mm512_fmadd_ps(a.s, rescale(a.m, mab), _mm512_mul_ps(b.s, rescale(b.m, mab)));
  const float big = _mm512_reduce_max_ps(mab);
  const float sum = _mm512_reduce_add_ps(_mm512_mul_ps(sab, rescale(mab, _mm512_set1_ps(big))));
  if (sum != sum || big == __builtin_inff())
    return fill_row(y, 0, n, __builtin_nanf(""));                // NaN or +inf logit
  if (big == -__builtin_inff()) return fill_row(y, 0, n, 0.0f);  // all -inf
  const __m512 vbig = _mm512_set1_ps(big), inv = _mm512_set1_ps(1.0f / sum);
  for (j = 0; j < valid; j += kLanes) {
    const __m512 p = _mm512_mul_ps(
        exp_neg_ps(_mm512_sub_ps(logits<M>(x, mask, scale, j, lanes_below(valid - j)), vbig)), inv);
    _mm512_mask_storeu_ps(y + j, lanes_below(n - j), p);  // lanes >= valid hold exp(-inf) = 0
  }
  fill_row(y, j, n, 0.0f);
}

// Rows that stay in cache (kCachedRow): the max first, then y = exp(l - max) with the sum,
// then y *= 1 / sum -- one exp per element instead of the online pass's two; the extra
// passes hit L1/L2.
template <MaskMode M>
void softmax_cached(const float* x, const float* mask, __m512 scale, int64_t valid, int64_t n, float* y) {
  __m512 m0 = _mm512_set1_ps(-__builtin_inff()), m1 = m0;
  int64_t j = 0;
  for (; j + 2 * kLanes <= valid; j += 2 * kLanes) {
    m0 = _mm512_max_ps(m0, logits<M>(x, mask, scale, j, 0xffff));
    m1 = _mm512_max_ps(m1, logits<M>(x, mask, scale, j + kLanes, 0xffff));
  }
  for (; j < valid; j += kLanes) m0 = _mm512_max_ps(m0, logits<M>(x, mask, scale, j, lanes_below(valid - j)));
  // max_ps may drop a NaN logit: then the sum below is NaN, unless every other logit is -inf.
  const float big = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
  if (big == __builtin_inff()) return fill_row(y, 0, n, __builtin_nanf(""));  // +inf logit: NaN row
  if (big == -__builtin_inff()) {
    __mmask16 nan = 0;
    for (j = 0; j < valid; j += kLanes) {
      const __m512 l = logits<M>(x, mask, scale, j, lanes_below(valid - j));
      nan |= _mm512_cmp_ps_mask(l, l, _CMP_UNORD_Q);
    }
    return fill_row(y, 0, n, nan != 0 ? __builtin_nanf("") : 0.0f);  // NaN row, or all -inf: zeros
  }
  const __m512 vbig = _mm512_set1_ps(big);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  for (j = 0; j + 2 * kLanes <= valid; j += 2 * kLanes) {
    const __m512 e0 = exp_neg_ps(_mm512_sub_ps(logits<M>(x, mask, scale, j, 0xffff), vbig));
    const __m512 e1 = exp_neg_ps(_mm512_sub_ps(logits<M>(x, mask, scale, j + kLanes, 0xffff), vbig));
    _mm512_storeu_ps(y + j, e0);
    _mm512_storeu_ps(y + j + kLanes, e1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  for (; j < valid; j += kLanes) {
    const __m512 e = exp_neg_ps(_mm512_sub_ps(logits<M>(x, mask, scale, j, lanes_below(valid - j)), vbig));
    _mm512_mask_storeu_ps(y + j, lanes_below(n - j), e);  // lanes >= valid hold exp(-inf) = 0
    s0 = _mm512_add_ps(s0, e);
  }
  const int64_t written = j;
  const float sum = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
  if (sum != sum) return fill_row(y, 0, n, __builtin_nanf(""));  // a NaN logit
  const __m512 inv = _mm512_set1_ps(1.0f / sum);
  for (j = 0; j + kLanes <= valid; j += kLanes)
    _mm512_storeu_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(y + j), inv));
  if (j < valid) {
    const __mmask16 k = lanes_below(valid - j);
    _mm512_mask_storeu_ps(y + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + j), inv));
  }
  fill_row(y, written, n, 0.0f);  // [valid, written) already holds zeros
}

template <MaskMode M>
void softmax_row_t(const float* x, const float* mask, float scale_f, int64_t valid, int64_t n, float* y) {
  const __m512 scale = _mm512_set1_ps(scale_f);
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

// Per-lane Welford state: count, mean and sum of squared deviations.
struct Moments {
  __m512 n = _mm512_setzero_ps(), mean = _mm512_setzero_ps(), m2 = _mm512_setzero_ps();
};

// Chan et al.'s pairwise combination, lane by lane; empty lanes (n = 0) are neutral.
Moments merge(const Moments& a, const Moments& b) {
  Moments r;
  r.n = _mm512_add_ps(a.n, b.n);
  const __m512 f =
      _mm512_mul_ps(b.n, rcp_ps(_mm512_max_ps(r.n, _mm512_set1_ps(1.0f))));  // ~1 ulp is plenty here
  const __m512 delta = _mm512_sub_ps(b.mean, a.mean);
  r.mean = _mm512_fmadd_ps(delta, f, a.mean);
  r.m2 = _mm512_fmadd_ps(_mm512_mul_ps(delta, delta), _mm512_mul_ps(a.n, f), _mm512_add_ps(a.m2, b.m2));
  return r;
}

Moments permuted(const Moments& a, int which) {
  auto perm = [which](__m512 v) {
    switch (which) {
      case 0: return _mm512_shuffle_f32x4(v, v, 0x4e);  // swap 256-bit halves
      case 1: return _mm512_shuffle_f32x4(v, v, 0xb1);  // swap 128-bit quarters
      case 2: return _mm512_permute_ps(v, 0x4e);        // swap 64-bit pairs
      default: return _mm512_permute_ps(v, 0xb1);       // swap neighbours
    }
  };
  Moments r;
  r.n = perm(a.n), r.mean = perm(a.mean), r.m2 = perm(a.m2);
  return r;
}

template <ParamType T>
__m512 load_param(const void* p, int64_t j, __mmask16 k) {
  if constexpr (T == ParamType::f32) return _mm512_maskz_loadu_ps(k, static_cast<const float*>(p) + j);
  const __m256i h = _mm256_maskz_loadu_epi16(k, static_cast<const uint16_t*>(p) + j);
  if constexpr (T == ParamType::f16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <ParamType G, ParamType B>
void layer_norm_rows_t(const float* x, float* y, int64_t rows, int64_t d, float eps, const void* gamma,
                       const void* beta) {
  for (int64_t r = 0; r < rows; ++r, x += d, y += d) {
    // One pass: two Welford chains over alternate vectors (every lane of a chain has the same
    // count, so 1/k is a broadcast scalar), the last partial vector under a mask. The data are
    // shifted by the row's first element: the chains then track a small mean (few ulp of
    // it lost, not of |mean|), and the normalise pass forms (x - shift) - mean_shifted, exact
    // for rows clustered far from 0 (|mean| >> std), where x - mean_f32 would not be.
    const __m512 shift = _mm512_set1_ps(x[0]);
    Moments a, b;
    int64_t j = 0, k = 0;
    for (; j + 2 * kLanes <= d; j += 2 * kLanes) {
      const __m512 rk = _mm512_set1_ps(1.0f / float(++k));
      const __m512 x0 = _mm512_sub_ps(_mm512_loadu_ps(x + j), shift);
      const __m512 x1 = _mm512_sub_ps(_mm512_loadu_ps(x + j + kLanes), shift);
      const __m512 d0 = _mm512_sub_ps(x0, a.mean), d1 = _mm512_sub_ps(x1, b.mean);
      a.mean = _mm512_fmadd_ps(d0, rk, a.mean);
      b.mean = _mm512_fmadd_ps(d1, rk, b.mean);
      a.m2 = _mm512_fmadd_ps(d0, _mm512_sub_ps(x0, a.mean), a.m2);
      b.m2 = _mm512_fmadd_ps(d1, _mm512_sub_ps(x1, b.mean), b.m2);
    }
    a.n = b.n = _mm512_set1_ps(float(k));
    for (; j < d; j += kLanes) {
      const __mmask16 m = lanes_below(d - j);
      const __m512 xv = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), shift);
      a.n = _mm512_mask_add_ps(a.n, m, a.n, _mm512_set1_ps(1.0f));
      const __m512 delta = _mm512_sub_ps(xv, a.mean);
      a.mean = _mm512_mask_add_ps(a.mean, m, a.mean,
                                  _mm512_div_ps(delta, _mm512_max_ps(a.n, _mm512_set1_ps(1.0f))));
      a.m2 = _mm512_mask3_fmadd_ps(delta, _mm512_sub_ps(xv, a.mean), a.m2, m);
    }
    Moments t = merge(a, b);
    for (int step = 0; step < 4; ++step) t = merge(t, permuted(t, step));
    const float mean = _mm512_cvtss_f32(t.mean);
    const float var = _mm512_cvtss_f32(t.m2) / float(d);
    const __m512 vmean = _mm512_set1_ps(mean), inv = _mm512_set1_ps(1.0f / __builtin_sqrtf(var + eps));
    for (j = 0; j < d; j += kLanes) {
      const __mmask16 m = lanes_below(d - j);
      const __m512 xs = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), shift);
      const __m512 xn = _mm512_mul_ps(_mm512_sub_ps(xs, vmean), inv);
      _mm512_mask_storeu_ps(y + j, m,
                            _mm512_fmadd_ps(xn, load_param<G>(gamma, j, m), load_param<B>(beta, j, m)));
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

const NormalizationIsa kNormalizationAvx512 = {&softmax_row, &layer_norm_rows};

}  // namespace longrun::cpu
