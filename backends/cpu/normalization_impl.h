// The softmax and layer_norm row algorithms (contract in normalization.h), written once
// against a vector struct V (vec_avx2.h / vec_avx512.h) and a per-ISA choice Cfg. Included
// only by normalization_avx2.cpp / normalization_avx512.cpp, each of which instantiates
// NormalizationKernels<its Vec, its Cfg>, so every instantiation is compiled with its ISA's
// flags.
//
// Cfg::kMaskEveryVector: whole vectors of logits also go through the masked path (AVX-512,
// where a k-masked load costs nothing). This changes bits, not just speed: the blend after
// the masked load keeps the compiler from contracting x * scale - max into one FMA, which it
// does on the unmasked path (AVX2). Cfg::kShiftByFirstLogit: softmax rows without a mask
// shift their logits by the first one, checked by the sum, instead of by the max (the comment
// above softmax_cached says when that holds). Cfg::kLayerNormFetchFromMemory: layer_norm
// fetches its input ahead when that comes from beyond the last-level cache (layer_norm_rows_t
// says why AVX-512 does not).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/normalization.h"

namespace longrun::cpu {
namespace {  // internal linkage: each ISA file owns its instantiations

// raw: no mask and scale 1 (the logits are x itself).
enum class MaskMode { raw, none, vector, scalar };

// Rows of at most this many logits can be streamed (softmax_cached): the exps wait in a
// stack buffer of this size (16 KiB) instead of in y.
constexpr int64_t kStreamedRow = 4096;

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

  // The max logit of lanes [0, valid). max may drop a NaN logit: then the row's sum is NaN,
  // unless every other logit is -inf (fill_special_row).
  template <MaskMode Mm>
  static float row_max(const float* x, const float* mask, T scale, int64_t valid) {
    T m0 = neg_inf(), m1 = m0;
    int64_t j = 0;
    for (; j + 2 * L <= valid; j += 2 * L) {
      m0 = V::max(m0, logits<Mm>(x, mask, scale, j));
      m1 = V::max(m1, logits<Mm>(x, mask, scale, j + L));
    }
    for (; j < valid; j += L) m0 = V::max(m0, logits<Mm>(x, mask, scale, j, V::first_n(valid - j)));
    return V::hmax(V::max(m0, m1));
  }

  // A row whose max logit `big` is +inf (a NaN row) or -inf (zeros, or a NaN row when a
  // logit is NaN: max may have dropped it).
  template <MaskMode Mm>
  static void fill_special_row(const float* x, const float* mask, T scale, int64_t valid, int64_t n, float* y,
                               float big) {
    if (big == __builtin_inff()) return fill_row(y, 0, n, __builtin_nanf(""));
    M nan = V::no_lanes();
    for (int64_t j = 0; j < valid; j += L)
      nan = V::mask_or(nan, V::is_nan(logits<Mm>(x, mask, scale, j, V::first_n(valid - j))));
    fill_row(y, 0, n, V::any(nan) ? __builtin_nanf("") : 0.0f);
  }

  // The exp pass's step over two whole vectors at j: out = exp(l - big), added to the two
  // running sums.
  template <MaskMode Mm>
  static inline __attribute__((always_inline)) void exp_pair(const float* x, const float* mask, T scale,
                                                             int64_t j, T vbig, float* out, T& s0, T& s1) {
    const T e0 = V::exp_neg(V::sub(logits<Mm>(x, mask, scale, j), vbig));
    const T e1 = V::exp_neg(V::sub(logits<Mm>(x, mask, scale, j + L), vbig));
    V::store(out + j, e0);
    V::store(out + j + L, e1);
    s0 = V::add(s0, e0);
    s1 = V::add(s1, e1);
  }

  // y = from * inv over n floats (softmax_cached's last pass; from may be y). `streamed`:
  // non-temporal stores, n a whole number of vectors, y on a vector boundary (no sfence here).
  static void scale_row(float* y, const float* from, int64_t n, T inv, bool streamed) {
    int64_t j = 0;
    if (streamed) {
      for (; j < n; j += L) V::stream(y + j, V::mul(V::load(from + j), inv));
      return;
    }
    for (; j + L <= n; j += L) V::store(y + j, V::mul(V::load(from + j), inv));
    if (j < n) {
      const M k = V::first_n(n - j);
      V::store_n(y + j, k, V::mul(V::load_n(from + j, k), inv));
    }
  }

  // The shift c of y = exp(l - c) / sum exp(l - c) (any c gives the same softmax; c must
  // keep the exps from overflowing and the ones that matter from underflowing). The max logit
  // does, at the cost of a pass over the row before the exps. Cfg::kShiftByFirstLogit, rows
  // without a mask: the row's first logit instead, no pass, checked by the exps' sum. That
  // logit adds exp(0) = 1, so the sum is at least 1: c is at most the max, and nothing that
  // the max would keep is flushed. A sum of at most kShiftGuessSumMax means that no exp
  // overflowed and 1 / sum is a normal number. Any other sum (a logit more than about 44 above
  // the first, an inf or NaN logit) sends the row back to the max and a second exp pass. The
  // exp must then hold for positive arguments up to kShiftGuessSumMax's log and overflow to
  // +inf above (avx512::exp_neg_ps: checked exhaustively, max 1.76 ulp; the AVX2 one's integer
  // exponent add wraps instead). Rows of at most kStreamedRow logits only: the guess's exps must not
  // overwrite an input row that may still be needed, so in place they wait in a stack buffer
  // of that size (the bits then do not depend on whether y aliases x).
  static constexpr float kShiftGuessSumMax = 0x1p64f;
  template <MaskMode Mm>
  static bool shift_by_first_logit(int64_t valid) {
    return Cfg::kShiftByFirstLogit && (Mm == MaskMode::raw || Mm == MaskMode::none) && valid <= kStreamedRow;
  }
  template <MaskMode Mm>
  static float first_logit(const float* x, T scale) {
    return V::first(logits<Mm>(x, nullptr, scale, 0, V::first_n(1)));
  }
  static bool shift_guess_holds(float sum) { return sum <= kShiftGuessSumMax; }  // false for NaN

  // The exp pass of softmax_cached: out = exp(l - shift) over lanes [0, valid) (and zeros up to
  // the next whole vector, below n); returns the sum. `fetch`: as softmax_cached.
  template <MaskMode Mm>
  static float exp_pass(const float* x, const float* mask, T scale, int64_t valid, int64_t n, float shift,
                        float* out, const float* fetch) {
    const T vshift = V::set1(shift);
    T s0 = V::zero(), s1 = s0;
    int64_t j = 0;
    for (; j + 2 * L <= valid; j += 2 * L) {
      // The exps leave the load ports idle: the rows ahead are fetched line by line here,
      // spread over the pass rather than in a burst before each row. The output rows need no
      // fetch: this pass waits on its input, not on y's ownership reads.
      if (fetch != nullptr)
        for (int e = 0; e < 2 * L; e += 16)
          _mm_prefetch(reinterpret_cast<const char*>(fetch + j + e), _MM_HINT_T0);
      exp_pair<Mm>(x, mask, scale, j, vshift, out, s0, s1);
    }
    for (; j < valid; j += L) {
      const T e = V::exp_neg(V::sub(logits<Mm>(x, mask, scale, j, V::first_n(valid - j)), vshift));
      V::store_n(out + j, V::first_n(n - j), e);  // lanes >= valid hold exp(-inf) = 0
      s0 = V::add(s0, e);
    }
    return V::hsum(V::add(s0, s1));
  }

  // The exp pass shifted by the max (the first pass, or after a first-logit shift failed its
  // check): false when the max is +-inf, the row then filled as fill_special_row fills it.
  template <MaskMode Mm>
  static bool exp_pass_from_max(const float* x, const float* mask, T scale, int64_t valid, int64_t n,
                                float* y, float* out, const float* fetch, float* sum) {
    const float big = row_max<Mm>(x, mask, scale, valid);
    if (big == __builtin_inff() || big == -__builtin_inff()) {
      fill_special_row<Mm>(x, mask, scale, valid, n, y, big);
      return false;
    }
    *sum = exp_pass<Mm>(x, mask, scale, valid, n, big, out, fetch);
    return true;
  }

  // Rows that stay in cache (kSoftmaxCachedRow): the shift (the max, or the first logit
  // checked by the sum), then y = exp(l - shift) with the sum, then y *= 1 / sum -- one exp per
  // element instead of the online pass's two; the extra passes hit L1/L2. Streamed (whole
  // rows of at most kStreamedRow, y on a vector boundary): the exps go to a stack buffer, and
  // the last pass writes y once with non-temporal stores, so y's lines are never read for
  // ownership. Rows that are not streamed keep their exps in y itself: y is in cache, and a
  // second buffer would only add cache footprint.
  template <MaskMode Mm>
  static void softmax_cached(const float* x, const float* mask, T scale, int64_t valid, int64_t n, float* y,
                             bool stream, const float* fetch) {
    alignas(64) float row[kStreamedRow];
    const bool streamed = stream && valid == n && n <= kStreamedRow && n % L == 0;
    const bool by_first = shift_by_first_logit<Mm>(valid);
    float* e_out = streamed || (by_first && y == x) ? row : y;
    float sum = 0.0f;
    bool have_sum = false;
    if (by_first) {
      sum = exp_pass<Mm>(x, mask, scale, valid, n, first_logit<Mm>(x, scale), e_out, fetch);
      have_sum = shift_guess_holds(sum);
    }
    if (!have_sum && !exp_pass_from_max<Mm>(x, mask, scale, valid, n, y, e_out, fetch, &sum)) return;
    if (sum != sum) return fill_row(y, 0, n, __builtin_nanf(""));  // a NaN logit
    const T inv = V::set1(1.0f / sum);
    if (streamed) {
      scale_row(y, row, n, inv, true);
      _mm_sfence();
      return;
    }
    scale_row(y, e_out, valid, inv, false);
    fill_row(y, e_out == y ? (valid + L - 1) / L * L : valid, n, 0.0f);  // y's zeros up to a whole vector
  }

  // Whole rows without a mask, each row's passes (softmax_cached) run software-pipelined
  // across rows: row r's exp pass also applies row r - 1's 1 / sum and, where the shift is
  // the max, takes row r + 1's max, so no pass waits on the horizontal max or sum just before
  // it. Every element goes through the same operations as in softmax_cached, so the bits are
  // the same. A row whose first-logit shift fails its check starts over as softmax_cached
  // does (its max, then a second exp pass on its own); a row whose max is +-inf (a NaN or all
  // -inf row) is filled as softmax_cached fills it. `stream` (rows of at most
  // kSoftmaxStreamedRows logits in whole vectors; y's rows on lines, as the caller checks): the
  // exps wait in the halves of one stack buffer, row by row in turn, and the scaling writes y
  // once with non-temporal stores.
  template <MaskMode Mm>
  static void softmax_rows_t(const float* x, T scale, int64_t n, int64_t rows, float* y, int64_t ahead,
                             bool stream) {
    const bool by_first = shift_by_first_logit<Mm>(n);
    constexpr int64_t kHalf = kSoftmaxStreamedRows;
    const bool streamed = stream && n <= kHalf && n % L == 0;
    const bool buffered = streamed || (by_first && y == x);  // exps in the halves of `exps`
    if (buffered && n > kHalf) {                             // in place, too long for a half: row by row
      for (int64_t r = 0; r < rows; ++r, x += n, y += n)
        softmax_cached<Mm>(x, nullptr, scale, n, n, y, false,
                           ahead > 0 && r + ahead < rows ? x + ahead * n : nullptr);
      return;
    }
    alignas(64) float exps[2 * kHalf];
    float* pending = nullptr;             // the output row still to be multiplied by pending_inv
    const float* pending_from = nullptr;  // where its exps are (pending itself unless streamed)
    T pending_inv = V::zero();
    auto scale_pending = [&] {  // the whole row at once (rows without a neighbour to ride on)
      if (pending != nullptr) scale_row(pending, pending_from, n, pending_inv, streamed);
    };
    float big = by_first ? 0.0f : row_max<Mm>(x, nullptr, scale, n);
    for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
      const float* next = !by_first && r + 1 < rows ? x + n : nullptr;  // whose max to take
      const float* fetch = ahead > 0 && r + ahead < rows ? x + ahead * n : nullptr;
      if (!by_first && (big == __builtin_inff() || big == -__builtin_inff())) {  // as softmax_cached
        scale_pending();
        pending = nullptr;
        fill_special_row<Mm>(x, nullptr, scale, n, n, y, big);
        if (next != nullptr) big = row_max<Mm>(next, nullptr, scale, n);
        continue;
      }
      float* const out = buffered ? exps + (r & 1) * kHalf : y;
      const T vshift = V::set1(by_first ? first_logit<Mm>(x, scale) : big);
      T m0 = neg_inf(), m1 = m0, s0 = V::zero(), s1 = s0;
      int64_t j = 0;
      for (; j + 2 * L <= n; j += 2 * L) {
        if (fetch != nullptr)
          for (int e = 0; e < 2 * L; e += 16)
            _mm_prefetch(reinterpret_cast<const char*>(fetch + j + e), _MM_HINT_T0);
        if (next != nullptr) {
          m0 = V::max(m0, logits<Mm>(next, nullptr, scale, j));
          m1 = V::max(m1, logits<Mm>(next, nullptr, scale, j + L));
        }
        if (pending != nullptr) {
          const T p0 = V::mul(V::load(pending_from + j), pending_inv);
          const T p1 = V::mul(V::load(pending_from + j + L), pending_inv);
          if (streamed) {
            V::stream(pending + j, p0);
            V::stream(pending + j + L, p1);
          } else {
            V::store(pending + j, p0);
            V::store(pending + j + L, p1);
          }
        }
        exp_pair<Mm>(x, nullptr, scale, j, vshift, out, s0, s1);
      }
      for (; j < n; j += L) {  // streamed rows are whole vectors: k is then every lane
        const M k = V::first_n(n - j);
        if (next != nullptr) m0 = V::max(m0, logits<Mm>(next, nullptr, scale, j, k));
        if (pending != nullptr) {
          if (streamed)
            V::stream(pending + j, V::mul(V::load(pending_from + j), pending_inv));
          else
            V::store_n(pending + j, k, V::mul(V::load_n(pending_from + j, k), pending_inv));
        }
        const T e = V::exp_neg(V::sub(logits<Mm>(x, nullptr, scale, j, k), vshift));
        V::store_n(out + j, k, e);
        s0 = V::add(s0, e);
      }
      pending = nullptr;  // scaled in this pass
      float sum = V::hsum(V::add(s0, s1));
      if (next != nullptr) big = V::hmax(V::max(m0, m1));
      // A failed first-logit shift starts over from the max, as in softmax_cached.
      if (by_first && !shift_guess_holds(sum) &&
          !exp_pass_from_max<Mm>(x, nullptr, scale, n, n, y, out, nullptr, &sum))
        continue;
      if (sum != sum) {  // a NaN logit
        fill_row(y, 0, n, __builtin_nanf(""));
      } else {
        pending = y;
        pending_from = out;
        pending_inv = V::set1(1.0f / sum);
      }
    }
    scale_pending();
    if (streamed) _mm_sfence();
  }

  static void softmax_rows(const float* x, float scale, int64_t n, int64_t rows, float* y, int64_t ahead,
                           bool stream) {
    if (scale == 1.0f) return softmax_rows_t<MaskMode::raw>(x, V::set1(scale), n, rows, y, ahead, stream);
    softmax_rows_t<MaskMode::none>(x, V::set1(scale), n, rows, y, ahead, stream);
  }

  template <MaskMode Mm>
  static void softmax_row_t(const float* x, const float* mask, float scale_f, int64_t valid, int64_t n,
                            float* y, bool stream, const float* fetch) {
    const T scale = V::set1(scale_f);
    if (valid <= kSoftmaxCachedRow) return softmax_cached<Mm>(x, mask, scale, valid, n, y, stream, fetch);
    softmax_online<Mm>(x, mask, scale, valid, n, y);
  }

  static void softmax_row(const float* x, const float* mask, int mask_step, float scale, int64_t valid,
                          int64_t n, float* y, bool stream, const float* fetch) {
    if (mask == nullptr && scale == 1.0f)
      return softmax_row_t<MaskMode::raw>(x, mask, scale, valid, n, y, stream, fetch);
    if (mask == nullptr) return softmax_row_t<MaskMode::none>(x, mask, scale, valid, n, y, stream, fetch);
    if (mask_step) return softmax_row_t<MaskMode::vector>(x, mask, scale, valid, n, y, stream, fetch);
    return softmax_row_t<MaskMode::scalar>(x, mask, scale, valid, n, y, stream, fetch);
  }

  // ---- layer_norm -------------------------------------------------------------------------

  // Lanes [j, j + min(L, d - j)) of gamma / beta as f32 (k = first_n(d - j)); zeros beyond.
  template <ParamType P>
  static T load_param(const void* p, int64_t j, int64_t d, M k) {
    if constexpr (P == ParamType::f32) return V::load_n(static_cast<const float*>(p) + j, k);
    const typename V::H h = V::load_u16_n(static_cast<const uint16_t*>(p) + j, d - j, k);
    if constexpr (P == ParamType::f16) return V::widen_f16(h);
    return V::widen_bf16(h);
  }

  // A whole vector of gamma / beta at j as f32.
  template <ParamType P>
  static T load_param(const void* p, int64_t j) {
    if constexpr (P == ParamType::f32) return V::load(static_cast<const float*>(p) + j);
    const typename V::H h = V::load_u16(static_cast<const uint16_t*>(p) + j);
    if constexpr (P == ParamType::f16) return V::widen_f16(h);
    return V::widen_bf16(h);
  }

  // A row fetches the input kRowFetchAheadFloats ahead into L1 during one of its passes:
  // the three passes over a row and its serial mean -> variance -> scale steps otherwise
  // leave the next rows' loads waiting behind them. Which pass:
  // - input from the L3: the variance pass (four lines per four vectors), which has load
  //   slots to spare; in the normalise pass the extra loads would compete with its own.
  // - input from memory (RowFlow::fetch_ahead, Cfg::kLayerNormFetchFromMemory): the
  //   normalise pass (a line per vector), which is the longest of the three and so hides
  //   the DRAM latency best. AVX-512 fetches nothing there: with 16-lane passes the
  //   software fetches cost more load slots than they save in waiting.
  // The output rows are not fetched for writing: the passes wait on their input.

  template <ParamType G, ParamType B>
  static void layer_norm_rows_t(const float* x, float* y, int64_t rows, int64_t d, float eps,
                                const void* gamma, const void* beta, RowFlow flow) {
    const bool stream = flow.stream;
    const float* const x_end = x + rows * d;
    for (int64_t r = 0; r < rows; ++r, x += d, y += d) {
      // Two passes over the row (it is in L1 after the first): the mean, then the sum of
      // squared deviations from it, four chains each (the adds are independent, so the
      // passes run at the FMA throughput, where one-pass Welford chains would be bound by
      // their sub -> FMA latency). The data are shifted by the row's first element: the sums then
      // track a small mean (few ulp of it lost, not of |mean|), and the normalise pass forms
      // (x - shift) - mean_shifted, exact for rows clustered far from 0 (|mean| >> std),
      // where x - mean_f32 would not be.
      const T shift = V::set1(x[0]);
      T s0 = V::zero(), s1 = s0, s2 = s0, s3 = s0;
      int64_t j = 0;
      for (; j + 4 * L <= d; j += 4 * L) {
        s0 = V::add(s0, V::sub(V::load(x + j), shift));
        s1 = V::add(s1, V::sub(V::load(x + j + L), shift));
        s2 = V::add(s2, V::sub(V::load(x + j + 2 * L), shift));
        s3 = V::add(s3, V::sub(V::load(x + j + 3 * L), shift));
      }
      for (; j < d; j += L) {
        const M m = V::first_n(d - j);
        s0 = V::add_where(m, s0, V::sub(V::load_n(x + j, m), shift));
      }
      const float mean = V::hsum(V::add(V::add(s0, s1), V::add(s2, s3))) / float(d);
      const T vmean = V::set1(mean);
      T q0 = V::zero(), q1 = q0, q2 = q0, q3 = q0;
      const bool fetch = x_end - x >= kRowFetchAheadFloats + d;  // the whole row ahead is input
      const float* ahead = fetch ? x + kRowFetchAheadFloats : x;
      const bool fetch_in_variance = fetch && !flow.fetch_ahead,
                 fetch_in_normalise = fetch && flow.fetch_ahead && Cfg::kLayerNormFetchFromMemory;
      for (j = 0; j + 4 * L <= d; j += 4 * L) {
        if (fetch_in_variance)
          for (int e = 0; e < 4 * L; e += 16)
            _mm_prefetch(reinterpret_cast<const char*>(ahead + j + e), _MM_HINT_T0);
        const T d0 = V::sub(V::sub(V::load(x + j), shift), vmean);
        const T d1 = V::sub(V::sub(V::load(x + j + L), shift), vmean);
        const T d2 = V::sub(V::sub(V::load(x + j + 2 * L), shift), vmean);
        const T d3 = V::sub(V::sub(V::load(x + j + 3 * L), shift), vmean);
        q0 = V::fmadd(d0, d0, q0);
        q1 = V::fmadd(d1, d1, q1);
        q2 = V::fmadd(d2, d2, q2);
        q3 = V::fmadd(d3, d3, q3);
      }
      for (; j < d; j += L) {
        const M m = V::first_n(d - j);
        const T dv = V::sub(V::sub(V::load_n(x + j, m), shift), vmean);
        q0 = V::fmadd_where(m, dv, dv, q0);
      }
      const float var = V::hsum(V::add(V::add(q0, q1), V::add(q2, q3))) / float(d);
      const T inv = V::set1(1.0f / __builtin_sqrtf(var + eps));
      // Whole vectors with plain loads, then one masked tail: a masked load per vector (AVX2
      // vmaskmovps, slow on AMD cores) would make this pass the bottleneck.
      for (j = 0; j + L <= d; j += L) {
        if (fetch_in_normalise) _mm_prefetch(reinterpret_cast<const char*>(ahead + j), _MM_HINT_T0);
        const T xn = V::mul(V::sub(V::sub(V::load(x + j), shift), vmean), inv);
        const T out = V::fmadd(xn, load_param<G>(gamma, j), load_param<B>(beta, j));
        if (stream)
          V::stream(y + j, out);
        else
          V::store(y + j, out);
      }
      if (j < d) {
        const M m = V::first_n(d - j);
        const T xn = V::mul(V::sub(V::sub(V::load_n(x + j, m), shift), vmean), inv);
        V::store_n(y + j, m, V::fmadd(xn, load_param<G>(gamma, j, d, m), load_param<B>(beta, j, d, m)));
      }
    }
    if (stream) _mm_sfence();
  }

  template <ParamType G>
  static void layer_norm_rows_g(const float* x, float* y, int64_t rows, int64_t d, float eps,
                                const void* gamma, const void* beta, ParamType bt, RowFlow flow) {
    switch (bt) {
      case ParamType::f32: return layer_norm_rows_t<G, ParamType::f32>(x, y, rows, d, eps, gamma, beta, flow);
      case ParamType::f16: return layer_norm_rows_t<G, ParamType::f16>(x, y, rows, d, eps, gamma, beta, flow);
      case ParamType::bf16:
        return layer_norm_rows_t<G, ParamType::bf16>(x, y, rows, d, eps, gamma, beta, flow);
    }
  }

  static void layer_norm_rows(const float* x, float* y, int64_t rows, int64_t d, float eps, const void* gamma,
                              ParamType gt, const void* beta, ParamType bt, RowFlow flow) {
    switch (gt) {
      case ParamType::f32:
        return layer_norm_rows_g<ParamType::f32>(x, y, rows, d, eps, gamma, beta, bt, flow);
      case ParamType::f16:
        return layer_norm_rows_g<ParamType::f16>(x, y, rows, d, eps, gamma, beta, bt, flow);
      case ParamType::bf16:
        return layer_norm_rows_g<ParamType::bf16>(x, y, rows, d, eps, gamma, beta, bt, flow);
    }
  }

  static constexpr NormalizationIsa kTable = {&softmax_row, &softmax_rows, &layer_norm_rows};
};

}  // namespace
}  // namespace longrun::cpu
