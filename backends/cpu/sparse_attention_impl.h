// The gathered-key sparse attention algorithm, written once against a vector struct V
// (attention_vexp_avx2.h / attention_vexp_avx512.h). Included only by
// sparse_attention_avx2.cpp / sparse_attention_avx512.cpp, each instantiating it with its
// own types.
//
// Per query: the valid slots of its index row (-1 dropped, repeats kept) form a key list;
// logits are computed L keys at a time (L dot-product accumulators, then one transposed
// horizontal sum gives L logits in one vector), softmaxed with the usual max shift, and
// the V rows of the list are summed with those weights. Keys outside the list are never
// read, so the cost is O(kk * (hd + hv)) per query.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/attention.h"

namespace longrun::cpu {
namespace {  // internal linkage: each ISA file owns its instantiations

template <class V>
struct SparseAttention {
  using T = typename V::T;
  static constexpr int L = V::L;
  static constexpr int kPvVecs = 4;      // hv vectors per pass over the key list
  static constexpr int kMaxDotVecs = 8;  // hd up to 8 vectors (+ a tail) keeps q in registers

  // Lane s = q . K[keys[s]] for L keys (q zero-padded to whole vectors), as L single-vector
  // accumulators folded by one transposed horizontal sum. DV full vectors of hd are known
  // at compile time (q stays in registers); kTail adds one partial vector, read with a
  // partial load so no row is read past its end. DV < 0: any hd, q read from memory.
  template <int DV, bool kTail>
  static T dots(const float* q, const float* kbase, int64_t kstride, const int32_t* keys, int64_t hd) {
    T acc[L];
    if constexpr (DV >= 0) {
      T qv[DV + 1];
      for (int d = 0; d < DV + int(kTail); ++d) qv[d] = V::load(q + d * L);
      const int tail = int(hd - int64_t(DV) * L);
      for (int s = 0; s < L; ++s) {
        const float* r = kbase + int64_t(keys[s]) * kstride;
        T a = V::zero();
        for (int d = 0; d < DV; ++d) a = V::fmadd(qv[d], V::load(r + d * L), a);
        if constexpr (kTail) a = V::fmadd(qv[DV], V::load_n(r + DV * L, tail), a);
        acc[s] = a;
      }
    } else {
      for (int s = 0; s < L; ++s) {
        const float* r = kbase + int64_t(keys[s]) * kstride;
        T a0 = V::zero(), a1 = V::zero();
        int64_t d = 0;
        for (; d + 2 * L <= hd; d += 2 * L) {
          a0 = V::fmadd(V::load(q + d), V::load(r + d), a0);
          a1 = V::fmadd(V::load(q + d + L), V::load(r + d + L), a1);
        }
        for (; d + L <= hd; d += L) a0 = V::fmadd(V::load(q + d), V::load(r + d), a0);
        if (d < hd) a1 = V::fmadd(V::load(q + d), V::load_n(r + d, int(hd - d)), a1);
        acc[s] = V::add(a0, a1);
      }
    }
    return V::transpose_sum(acc);
  }
  using DotsFn = T (*)(const float*, const float*, int64_t, const int32_t*, int64_t);
  template <int DV>
  static DotsFn pick_dots(int dv, bool tail) {
    if constexpr (DV > kMaxDotVecs) {
      return nullptr;
    } else {
      if (dv != DV) return pick_dots<DV + 1>(dv, tail);
      return tail ? &dots<DV, true> : &dots<DV, false>;
    }
  }
  static DotsFn dots_for(int64_t hd) {
    const DotsFn f = hd / L <= kMaxDotVecs ? pick_dots<0>(int(hd / L), hd % L != 0) : nullptr;
    return f != nullptr ? f : &dots<-1, false>;
  }

  // y[e0 .. e0 + E*L) (the last vector holding only `last` lanes when kTail) of one query:
  // sum over the list of w_s * V[key_s], two interleaved accumulator sets for FMA latency,
  // then divided by the softmax sum l.
  template <int E, bool kTail>
  static void pv(int cnt, const int32_t* keys, const float* w, const float* vbase, int64_t vstride, int last,
                 float l, float* y) {
    T a0[E], a1[E];
    for (int e = 0; e < E; ++e) a0[e] = a1[e] = V::zero();
    auto row = [&](const float* r, int e) {
      return (kTail && e == E - 1) ? V::load_n(r + e * L, last) : V::load(r + e * L);
    };
    int s = 0;
    for (; s + 2 <= cnt; s += 2) {
      const float* r0 = vbase + keys[s] * vstride;
      const float* r1 = vbase + keys[s + 1] * vstride;
      const T w0 = V::set1(w[s]), w1 = V::set1(w[s + 1]);
      for (int e = 0; e < E; ++e) {
        a0[e] = V::fmadd(w0, row(r0, e), a0[e]);
        a1[e] = V::fmadd(w1, row(r1, e), a1[e]);
      }
    }
    if (s < cnt) {
      const float* r0 = vbase + keys[s] * vstride;
      const T w0 = V::set1(w[s]);
      for (int e = 0; e < E; ++e) a0[e] = V::fmadd(w0, row(r0, e), a0[e]);
    }
    // l == 0: every weight was 0 (all logits -inf); the reference still sums 0 * v.
    const T lv = V::set1(l);
    for (int e = 0; e < E; ++e) {
      T x = V::add(a0[e], a1[e]);
      if (l != 0.0f) x = V::div(x, lv);
      if (kTail && e == E - 1)
        V::store_n(y + e * L, x, last);
      else
        V::store(y + e * L, x);
    }
  }
  template <int E>
  static void pv_width(int width, bool tail, int cnt, const int32_t* keys, const float* w, const float* vbase,
                       int64_t vstride, int last, float l, float* y) {
    if constexpr (E > 0) {
      if (width != E) return pv_width<E - 1>(width, tail, cnt, keys, w, vbase, vstride, last, l, y);
      if (tail) return pv<E, true>(cnt, keys, w, vbase, vstride, last, l, y);
      pv<E, false>(cnt, keys, w, vbase, vstride, last, l, y);
    }
  }

  // One query; false when its index row holds an index outside [-1, Nk).
  static bool query(const AttentionProblem& p, DotsFn dots, const float* qrow, const int32_t* irow,
                    const float* kbase, const float* vbase, float* yrow, const SparseScratchLayout& lay,
                    float* scratch) {
    auto* keys = reinterpret_cast<int32_t*>(scratch + lay.keys);
    float* logits = scratch + lay.logits;
    float* q = scratch + lay.q;
    // The key list, branch-free: every slot is written, only valid ones advance. Indices
    // are validated here too (no separate pass over them): a bad one fails the run.
    int cnt = 0;
    bool ok = true;
    for (int64_t s = 0; s < p.kk; ++s) {
      const int32_t j = irow[s * p.is[3]];
      ok &= j >= -1 && j < p.Nk;
      keys[cnt] = j;
      cnt += j != -1;  // a repeated key stays: it counts once per occurrence
    }
    if (!ok) return false;
    if (cnt == 0) {  // no valid slot: zeros
      std::memset(yrow, 0, sizeof(float) * size_t(p.hv));
      return true;
    }
    std::memcpy(q, qrow, sizeof(float) * size_t(p.hd));
    for (int64_t d = p.hd; d < (p.hd + L - 1) / L * L; ++d) q[d] = 0.0f;

    const T scale = V::set1(p.scale);
    T mx = V::set1(-__builtin_inff());
    // A short last group repeats its last key (the list has room for L - 1 more); those
    // lanes are then set to -inf.
    for (int s = cnt; s < (cnt + L - 1) / L * L; ++s) keys[s] = keys[cnt - 1];
    for (int g = 0; g < cnt; g += L) {
      T lg = V::mul(dots(q, kbase, p.ks[2], keys + g, p.hd), scale);
      if (cnt - g < L) lg = V::keep_first_n(lg, cnt - g);
      V::store(logits + g, lg);
      mx = V::max(mx, lg);
    }
    // A NaN logit may be dropped by the max, but it makes its exp, hence l, NaN.
    float m = V::hmax(mx);
    if (m == -__builtin_inff()) m = 0.0f;  // all logits -inf: weights exp(-inf) = 0
    const T shift = V::set1(m);
    T sum = V::zero();
    for (int g = 0; g < cnt; g += L) {
      const T w = V::exp(V::sub(V::load(logits + g), shift));
      V::store(logits + g, w);
      sum = V::add(sum, w);
    }
    const float l = V::hsum(sum);

    const int nev = int((p.hv + L - 1) / L);
    const int last = int(p.hv - int64_t(nev - 1) * L);
    for (int e0 = 0; e0 < nev; e0 += kPvVecs) {
      const int width = std::min(kPvVecs, nev - e0);
      const bool tail = e0 + width == nev && last < L;
      pv_width<kPvVecs>(width, tail, cnt, keys, logits, vbase + e0 * L, p.vs[2], last, l, yrow + e0 * L);
    }
    return true;
  }

  // Work items [begin, end): (b, h, block of kSparseBlockQ queries). False (at once) when an
  // index is out of range; the outputs are then unspecified.
  static bool run(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch) {
    const SparseScratchLayout lay = sparse_scratch_layout(p.kk, p.hd);
    const int64_t nqb = (p.Nq + kSparseBlockQ - 1) / kSparseBlockQ;
    const DotsFn dots = dots_for(p.hd);
    for (int64_t it = begin; it < end; ++it) {
      const int64_t qblk = it % nqb, bh = it / nqb, h = bh % p.H, b = bh / p.H;
      const float* kbase = p.k + b * p.ks[0] + h * p.ks[1];
      const float* vbase = p.v + b * p.vs[0] + h * p.vs[1];
      const int64_t iend = std::min(p.Nq, (qblk + 1) * kSparseBlockQ);
      for (int64_t i = qblk * kSparseBlockQ; i < iend; ++i)
        if (!query(p, dots, p.q + b * p.qs[0] + h * p.qs[1] + i * p.qs[2],
                   p.idx + b * p.is[0] + h * p.is[1] + i * p.is[2], kbase, vbase,
                   p.y + b * p.ys[0] + h * p.ys[1] + i * p.ys[2], lay, scratch))
          return false;
    }
    return true;
  }
};

}  // namespace
}  // namespace longrun::cpu
