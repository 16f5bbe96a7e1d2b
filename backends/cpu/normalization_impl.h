// The softmax and layer_norm row algorithms (contract in normalization.h), written once
// against a vector struct V (vec_avx2.h / vec_avx512.h) and a per-ISA choice Cfg. Included
// only by normalization_avx2.cpp / normalization_avx512.cpp, each of which instantiates
// NormalizationKernels<its Vec, its Cfg>, so every instantiation is compiled with its ISA's
// flags.
//
// Cfg::kMaskEveryVector: whole vectors of logits also go through the masked path (AVX-512,
// where a k-masked load costs nothing). This changes bits, not just speed: the blend after
// the masked load keeps the compiler from contracting x * scale - max into one FMA, which it
// does on the unmasked path (AVX2).
#pragma once

#include <cstdint>

#include "cpu/normalization.h"

namespace longrun::cpu {
namespace {  // internal linkage: each ISA file owns its instantiations

// raw: no mask and scale 1 (the logits are x itself).
enum class MaskMode { raw, none, vector, scalar };

// Rows up to this many elements (64 KB) take the cached three-pass path.
constexpr int64_t kCachedRow = 16384;

template <class V, class Cfg>
struct NormalizationKernels {
  using T = typename V::T;
  using M = typename V::M;
  static constexpr int L = V::L;

  // A function, not a namespace-scope constant: a static initializer would run AVX code at
  // program start on any machine.
  static T neg_inf() { return V::set1(-__builtin_inff()); }

  // ---- softmax ----------------------------------------------------------------------------

  // Logits of the L lanes at j.
  template <MaskMode Mm>
  static T logits(const float* x, const float* mask, T scale, int64_t j) {
    if constexpr (Cfg::kMaskEveryVector) return logits<Mm>(x, mask, scale, j, V::first_n(L));
    const T v = V::load(x + j);
    if constexpr (Mm == MaskMode::raw) return v;
    if constexpr (Mm == MaskMode::none) return V::mul(v, scale);
    if constexpr (Mm == MaskMode::vector) return V::fmadd(v, scale, V::load(mask + j));
    if constexpr (Mm == MaskMode::scalar) return V::fmadd(v, scale, V::set1(*mask));
  }

  // Logits of lanes [j, j + L) where `k` is set; other lanes are -inf.
  template <MaskMode Mm>
  static T logits(const float* x, const float* mask, T scale, int64_t j, M k) {
    const T v = V::load_n(x + j, k);
    T l;
    if constexpr (Mm == MaskMode::raw) l = v;
    if constexpr (Mm == MaskMode::none) l = V::mul(v, scale);
    if constexpr (Mm == MaskMode::vector) l = V::fmadd(v, scale, V::load_n(mask + j, k));
    if constexpr (Mm == MaskMode::scalar) l = V::fmadd(v, scale, V::set1(*mask));
    return V::blend(k, neg_inf(), l);
  }

  // Per-lane online softmax state: running max m and s = sum of exp(l - m) so far.
  struct Online {
    T m = V::set1(-__builtin_inff());
    T s = V::zero();
  };

  // One exp per element: if l > m the old sum is rescaled by exp(m - l) and l adds 1,
  // otherwise l adds exp(l - m); either way the exponent is -|l - m|. A -inf logit adds 0
  // (also when m is still -inf); a NaN logit makes s NaN, which the row check turns into a
  // NaN row; m never becomes NaN.
  static void update(Online& st, T l) {
    const M gt = V::gt(l, st.m);
    const T d = V::neg_abs(V::sub(l, st.m));
    const T e = V::keep(V::neq_uq(l, neg_inf()), V::exp_neg(d));  // -inf adds 0; NaN is kept
    st.s = V::fmadd_or_add(gt, st.s, e, V::set1(1.0f));
    st.m = V::blend(gt, st.m, l);
  }

  // exp(m - M) where m may be -inf (weight 0, also when M is -inf too).
  static T rescale(T m, T big) { return V::keep(V::neq_uq(m, neg_inf()), V::exp_neg(V::sub(m, big))); }

  static void fill_row(float* y, int64_t from, int64_t n, float v) {
    for (int64_t j = from; j < n; j += L) V::store_n(y + j, V::first_n(n - j), V::set1(v));
  }

  // Long rows: online max + sum in one pass over x (two chains), then y = exp(l - max) / sum.
  // Two exps per element, but x is read only twice whatever the row length.
  template <MaskMode Mm>
  static void softmax_online(const float* x, const float* mask, T scale, int64_t valid, int64_t n, float* y) {
    Online a, b;  // two independent chains (even / odd vectors)
    int64_t j = 0;
    for (; j + 2 * L <= valid; j += 2 * L) {
      update(a, logits<Mm>(x, mask, scale, j));
      update(b, logits<Mm>(x, mask, scale, j + L));
    }
    for (; j < valid; j += L) update(a, logits<Mm>(x, mask, scale, j, V::first_n(valid - j)));
    // Merge the chains lane by lane, then the lanes (fixed orders: deterministic).
    const T mab = V::max(a.m, b.m);
    const T sab = V::fmadd(a.s, rescale(a.m, mab), V::mul(b.s, rescale(b.m, mab)));
    const float big = V::hmax(mab);
    const float sum = V::hsum(V::mul(sab, rescale(mab, V::set1(big))));
    if (sum != sum || big == __builtin_inff())
      return fill_row(y, 0, n, __builtin_nanf(""));                // NaN or +inf logit
    if (big == -__builtin_inff()) return fill_row(y, 0, n, 0.0f);  // all -inf
    const T vbig = V::set1(big), inv = V::set1(1.0f / sum);
    for (j = 0; j < valid; j += L) {
      const T p = V::mul(V::exp_neg(V::sub(logits<Mm>(x, mask, scale, j, V::first_n(valid - j)), vbig)), inv);
      V::store_n(y + j, V::first_n(n - j), p);  // lanes >= valid hold exp(-inf) = 0
    }
    fill_row(y, j, n, 0.0f);
  }

  // Rows that stay in cache (kCachedRow): the max first, then y = exp(l - max) with the sum,
  // then y *= 1 / sum -- one exp per element instead of the online pass's two; the extra
  // passes hit L1/L2.
  template <MaskMode Mm>
  static void softmax_cached(const float* x, const float* mask, T scale, int64_t valid, int64_t n, float* y) {
    T m0 = neg_inf(), m1 = m0;
    int64_t j = 0;
    for (; j + 2 * L <= valid; j += 2 * L) {
      m0 = V::max(m0, logits<Mm>(x, mask, scale, j));
      m1 = V::max(m1, logits<Mm>(x, mask, scale, j + L));
    }
    for (; j < valid; j += L) m0 = V::max(m0, logits<Mm>(x, mask, scale, j, V::first_n(valid - j)));
    // max may drop a NaN logit: then the sum below is NaN, unless every other logit is -inf.
    const float big = V::hmax(V::max(m0, m1));
    if (big == __builtin_inff()) return fill_row(y, 0, n, __builtin_nanf(""));  // +inf logit: NaN row
    if (big == -__builtin_inff()) {
      M nan = V::no_lanes();
      for (j = 0; j < valid; j += L)
        nan = V::mask_or(nan, V::is_nan(logits<Mm>(x, mask, scale, j, V::first_n(valid - j))));
      return fill_row(y, 0, n, V::any(nan) ? __builtin_nanf("") : 0.0f);  // NaN row, or all -inf: zeros
    }
    const T vbig = V::set1(big);
    T s0 = V::zero(), s1 = s0;
    for (j = 0; j + 2 * L <= valid; j += 2 * L) {
      const T e0 = V::exp_neg(V::sub(logits<Mm>(x, mask, scale, j), vbig));
      const T e1 = V::exp_neg(V::sub(logits<Mm>(x, mask, scale, j + L), vbig));
      V::store(y + j, e0);
      V::store(y + j + L, e1);
      s0 = V::add(s0, e0);
      s1 = V::add(s1, e1);
    }
    for (; j < valid; j += L) {
      const T e = V::exp_neg(V::sub(logits<Mm>(x, mask, scale, j, V::first_n(valid - j)), vbig));
      V::store_n(y + j, V::first_n(n - j), e);  // lanes >= valid hold exp(-inf) = 0
      s0 = V::add(s0, e);
    }
    const int64_t written = j;
    const float sum = V::hsum(V::add(s0, s1));
    if (sum != sum) return fill_row(y, 0, n, __builtin_nanf(""));  // a NaN logit
    const T inv = V::set1(1.0f / sum);
    for (j = 0; j + L <= valid; j += L) V::store(y + j, V::mul(V::load(y + j), inv));
    if (j < valid) {
      const M k = V::first_n(valid - j);
      V::store_n(y + j, k, V::mul(V::load_n(y + j, k), inv));
    }
    fill_row(y, written, n, 0.0f);  // [valid, written) already holds zeros
  }

  template <MaskMode Mm>
  static void softmax_row_t(const float* x, const float* mask, float scale_f, int64_t valid, int64_t n,
                            float* y) {
    const T scale = V::set1(scale_f);
    if (valid <= kCachedRow) return softmax_cached<Mm>(x, mask, scale, valid, n, y);
    softmax_online<Mm>(x, mask, scale, valid, n, y);
  }

  static void softmax_row(const float* x, const float* mask, int mask_step, float scale, int64_t valid,
                          int64_t n, float* y) {
    if (mask == nullptr && scale == 1.0f) return softmax_row_t<MaskMode::raw>(x, mask, scale, valid, n, y);
    if (mask == nullptr) return softmax_row_t<MaskMode::none>(x, mask, scale, valid, n, y);
    if (mask_step) return softmax_row_t<MaskMode::vector>(x, mask, scale, valid, n, y);
    return softmax_row_t<MaskMode::scalar>(x, mask, scale, valid, n, y);
  }

  // ---- layer_norm -------------------------------------------------------------------------

  // Per-lane Welford state: count, mean and sum of squared deviations.
  struct Moments {
    T n = V::zero(), mean = V::zero(), m2 = V::zero();
  };

  // Chan et al.'s pairwise combination, lane by lane; empty lanes (n = 0) are neutral.
  static Moments merge(const Moments& a, const Moments& b) {
    Moments r;
    r.n = V::add(a.n, b.n);
    const T f = V::div_fast(b.n, V::max(r.n, V::set1(1.0f)));  // ~1 ulp is plenty here
    const T delta = V::sub(b.mean, a.mean);
    r.mean = V::fmadd(delta, f, a.mean);
    r.m2 = V::fmadd(V::mul(delta, delta), V::mul(a.n, f), V::add(a.m2, b.m2));
    return r;
  }

  static Moments swapped(const Moments& a, int step) {
    Moments r;
    r.n = V::swap_lanes(a.n, step), r.mean = V::swap_lanes(a.mean, step), r.m2 = V::swap_lanes(a.m2, step);
    return r;
  }

  // Lanes [j, j + min(L, d - j)) of gamma / beta as f32 (k = first_n(d - j)); zeros beyond.
  template <ParamType P>
  static T load_param(const void* p, int64_t j, int64_t d, M k) {
    if constexpr (P == ParamType::f32) return V::load_n(static_cast<const float*>(p) + j, k);
    const typename V::H h = V::load_u16_n(static_cast<const uint16_t*>(p) + j, d - j, k);
    if constexpr (P == ParamType::f16) return V::widen_f16(h);
    return V::widen_bf16(h);
  }

  template <ParamType G, ParamType B>
  static void layer_norm_rows_t(const float* x, float* y, int64_t rows, int64_t d, float eps,
                                const void* gamma, const void* beta) {
    const T one = V::set1(1.0f);
    for (int64_t r = 0; r < rows; ++r, x += d, y += d) {
      // One pass: two Welford chains over alternate vectors (every lane of a chain has the
      // same count, so 1/k is a broadcast scalar), the last partial vector under a mask. The
      // data are shifted by the row's first element: the chains then track a small mean (few
      // ulp of it lost, not of |mean|), and the normalise pass forms (x - shift) -
      // mean_shifted, exact for rows clustered far from 0 (|mean| >> std), where
      // x - mean_f32 would not be.
      const T shift = V::set1(x[0]);
      Moments a, b;
      int64_t j = 0, k = 0;
      for (; j + 2 * L <= d; j += 2 * L) {
        const T rk = V::set1(1.0f / float(++k));
        const T x0 = V::sub(V::load(x + j), shift);
        const T x1 = V::sub(V::load(x + j + L), shift);
        const T d0 = V::sub(x0, a.mean), d1 = V::sub(x1, b.mean);
        a.mean = V::fmadd(d0, rk, a.mean);
        b.mean = V::fmadd(d1, rk, b.mean);
        a.m2 = V::fmadd(d0, V::sub(x0, a.mean), a.m2);
        b.m2 = V::fmadd(d1, V::sub(x1, b.mean), b.m2);
      }
      a.n = b.n = V::set1(float(k));
      for (; j < d; j += L) {
        const M m = V::first_n(d - j);
        const T xv = V::sub(V::load_n(x + j, m), shift);
        a.n = V::add_where(m, a.n, one);
        const T delta = V::sub(xv, a.mean);
        a.mean = V::add_where(m, a.mean, V::div(delta, V::max(a.n, one)));
        a.m2 = V::fmadd_where(m, delta, V::sub(xv, a.mean), a.m2);
      }
      Moments t = merge(a, b);
      for (int step = 0; step < V::kLog2L; ++step) t = merge(t, swapped(t, step));
      const float mean = V::first(t.mean);
      const float var = V::first(t.m2) / float(d);
      const T vmean = V::set1(mean), inv = V::set1(1.0f / __builtin_sqrtf(var + eps));
      for (j = 0; j < d; j += L) {
        const M m = V::first_n(d - j);
        const T xs = V::sub(V::load_n(x + j, m), shift);
        const T xn = V::mul(V::sub(xs, vmean), inv);
        V::store_n(y + j, m, V::fmadd(xn, load_param<G>(gamma, j, d, m), load_param<B>(beta, j, d, m)));
      }
    }
  }

  template <ParamType G>
  static void layer_norm_rows_g(const float* x, float* y, int64_t rows, int64_t d, float eps,
                                const void* gamma, const void* beta, ParamType bt) {
    switch (bt) {
      case ParamType::f32: return layer_norm_rows_t<G, ParamType::f32>(x, y, rows, d, eps, gamma, beta);
      case ParamType::f16: return layer_norm_rows_t<G, ParamType::f16>(x, y, rows, d, eps, gamma, beta);
      case ParamType::bf16: return layer_norm_rows_t<G, ParamType::bf16>(x, y, rows, d, eps, gamma, beta);
    }
  }

  static void layer_norm_rows(const float* x, float* y, int64_t rows, int64_t d, float eps, const void* gamma,
                              ParamType gt, const void* beta, ParamType bt) {
    switch (gt) {
      case ParamType::f32: return layer_norm_rows_g<ParamType::f32>(x, y, rows, d, eps, gamma, beta, bt);
      case ParamType::f16: return layer_norm_rows_g<ParamType::f16>(x, y, rows, d, eps, gamma, beta, bt);
      case ParamType::bf16: return layer_norm_rows_g<ParamType::bf16>(x, y, rows, d, eps, gamma, beta, bt);
    }
  }

  static constexpr NormalizationIsa kTable = {&softmax_row, &layer_norm_rows};
};

}  // namespace
}  // namespace longrun::cpu
