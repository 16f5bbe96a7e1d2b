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

enum class MaskMode { none, vector, scalar };

// Logits of lanes [j, j + 16) where `k` is set; other lanes are -inf.
template <MaskMode M>
__m512 logits(const float* x, const float* mask, __m512 scale, int64_t j, __mmask16 k) {
  const __m512 v = _mm512_maskz_loadu_ps(k, x + j);
  __m512 l;
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
  const __m512 e = _mm512_mask_mov_ps(exp_ps(d), zero, _mm512_setzero_ps());
  st.s = _mm512_mask_fmadd_ps(st.s, gt, e, _mm512_set1_ps(1.0f));
  st.s = _mm512_mask_add_ps(st.s, __mmask16(~gt), st.s, e);
  st.m = _mm512_mask_mov_ps(st.m, gt, l);
}

// exp(m - M) where m may be -inf (weight 0, also when M is -inf too).
__m512 rescale(__m512 m, __m512 big) {
  const __mmask16 empty = _mm512_cmp_ps_mask(m, _mm512_set1_ps(-__builtin_inff()), _CMP_EQ_OQ);
  return _mm512_mask_mov_ps(exp_ps(_mm512_sub_ps(m, big)), empty, _mm512_setzero_ps());
}

template <MaskMode M>
void softmax_row_t(const float* x, const float* mask, float scale_f, int64_t valid, int64_t n, float* y) {
  const __m512 scale = _mm512_set1_ps(scale_f);
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

  j = 0;
  if (sum != sum || big == __builtin_inff()) {  // a NaN or +inf logit: NaN row
    for (; j < n; j += kLanes) _mm512_mask_storeu_ps(y + j, lanes_below(n - j), _mm512_set1_ps(__builtin_nanf("")));
    return;
  }
  if (big == -__builtin_inff()) valid = 0;  // every logit -inf: zeros
  const __m512 vbig = _mm512_set1_ps(big), inv = _mm512_set1_ps(1.0f / sum);
  for (; j < valid; j += kLanes) {
    const __mmask16 k = lanes_below(valid - j);
    const __m512 p = _mm512_mul_ps(exp_ps(_mm512_sub_ps(logits<M>(x, mask, scale, j, k), vbig)), inv);
    _mm512_mask_storeu_ps(y + j, lanes_below(n - j), p);  // lanes >= valid hold exp(-inf) = 0
  }
  for (; j < n; j += kLanes) _mm512_mask_storeu_ps(y + j, lanes_below(n - j), _mm512_setzero_ps());
}

void softmax_row(const float* x, const float* mask, int mask_step, float scale, int64_t valid, int64_t n,
                 float* y) {
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
  const __m512 f = _mm512_div_ps(b.n, _mm512_max_ps(r.n, _mm512_set1_ps(1.0f)));
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
      a.mean = _mm512_mask_add_ps(a.mean, m, a.mean, _mm512_div_ps(delta, _mm512_max_ps(a.n, _mm512_set1_ps(1.0f))));
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
      _mm512_mask_storeu_ps(y + j, m, _mm512_fmadd_ps(xn, load_param<G>(gamma, j, m), load_param<B>(beta, j, m)));
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
