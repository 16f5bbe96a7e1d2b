// The gathered-key sparse attention algorithm, written once against a vector struct V
// (attention_vexp_avx2.h / attention_vexp_avx512.h). Included only by
// sparse_attention_avx2.cpp / sparse_attention_avx512.cpp, each instantiating it with its
// own types.
//
// Per query: the valid slots of its index row (-1 dropped, repeats kept) form a key list;
// logits are computed L keys at a time (L dot-product accumulators, then one transposed
// horizontal sum gives L logits in one vector) and softmaxed with the usual max shift; the
// V rows of the list are summed with those weights. Keys outside the list are never read,
// so the cost is O(kk * (hd + hv)) per query. A block of queries runs the logits/weights of
// all its queries first and the V sums after (sparse_attention.h: one matrix hot at a time).
// KV is the element type of K and V: float, or uint16_t for bf16, whose gathered rows are
// half the bytes and are widened exactly to f32 in registers as they are loaded.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/attention.h"
#include "cpu/sparse_attention.h"

namespace longrun::cpu {
namespace {  // internal linkage: each ISA file owns its instantiations

template <class V, class KV>
struct SparseAttention {
  using T = typename V::T;
  static constexpr int L = V::L;
  static_assert(std::is_same_v<KV, float> || std::is_same_v<KV, uint16_t>);
  // L elements of a K or V row as f32 (bf16: widened), and the first n of them.
  static T ld(const KV* r) {
    if constexpr (std::is_same_v<KV, float>)
      return V::load(r);
    else
      return V::load_bf16(r);
  }
  static T ld_n(const KV* r, int n) {
    if constexpr (std::is_same_v<KV, float>)
      return V::load_n(r, n);
    else
      return V::load_bf16_n(r, n);
  }
  // hv vectors per pass over the key list: 64 floats, so a head of 64 reads each V row once
  // (one pass, one accumulator set per 64 floats) at both ISAs.
  static constexpr int kPvVecs = 64 / L;
  // Accumulator sets in pv: two interleaved ones for FMA latency while 2E accumulators and
  // two weights fit the registers (16 ymm / 32 zmm), else one.
  template <int E>
  static constexpr bool kTwoSets = 2 * E + 2 <= (L == 8 ? 16 : 32);
  static constexpr int kMaxDotVecs = 8;  // hd up to 8 vectors (+ a tail) keeps q in registers

  // Lane s = q . K[keys[s]] for L keys (q zero-padded to whole vectors), as L single-vector
  // accumulators folded by one transposed horizontal sum. DV full vectors of hd are known
  // at compile time (q stays in registers); kTail adds one partial vector, read with a
  // partial load so no row is read past its end. DV < 0: any hd, q read from memory.
  template <int DV, bool kTail>
  static T dots(const float* q, const KV* kbase, int64_t kstride, const int32_t* keys, int64_t hd) {
    T acc[L];
    if constexpr (DV >= 0) {
      T qv[DV + 1];
      for (int d = 0; d < DV + int(kTail); ++d) qv[d] = V::load(q + d * L);
      const int tail = int(hd - int64_t(DV) * L);
      // Vector d of every key before vector d + 1 of any: the group's L rows are all
      // requested within its first L loads, so their cache misses overlap from the start.
      const KV* r[L];
#pragma GCC unroll 16
      for (int s = 0; s < L; ++s) r[s] = kbase + int64_t(keys[s]) * kstride;
      if constexpr (DV > 0) {
#pragma GCC unroll 16
        for (int s = 0; s < L; ++s) acc[s] = V::mul(qv[0], ld(r[s]));
      } else if constexpr (kTail) {
#pragma GCC unroll 16
        for (int s = 0; s < L; ++s) acc[s] = V::mul(qv[0], ld_n(r[s], tail));
      } else {
        for (int s = 0; s < L; ++s) acc[s] = V::zero();  // hd = 0
      }
#pragma GCC unroll 8
      for (int d = 1; d < DV; ++d)
#pragma GCC unroll 16
        for (int s = 0; s < L; ++s) acc[s] = V::fmadd(qv[d], ld(r[s] + d * L), acc[s]);
      if constexpr (kTail && DV > 0) {
#pragma GCC unroll 16
        for (int s = 0; s < L; ++s) acc[s] = V::fmadd(qv[DV], ld_n(r[s] + DV * L, tail), acc[s]);
      }
    } else {
      for (int s = 0; s < L; ++s) {
        const KV* r = kbase + int64_t(keys[s]) * kstride;
        T a0 = V::zero(), a1 = V::zero();
        int64_t d = 0;
        for (; d + 2 * L <= hd; d += 2 * L) {
          a0 = V::fmadd(V::load(q + d), ld(r + d), a0);
          a1 = V::fmadd(V::load(q + d + L), ld(r + d + L), a1);
        }
        for (; d + L <= hd; d += L) a0 = V::fmadd(V::load(q + d), ld(r + d), a0);
        if (d < hd) a1 = V::fmadd(V::load(q + d), ld_n(r + d, int(hd - d)), a1);
        acc[s] = V::add(a0, a1);
      }
    }
    return V::transpose_sum(acc);
  }
  using DotsFn = T (*)(const float*, const KV*, int64_t, const int32_t*, int64_t);
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
  // sum over the list of w_s * V[key_s] (two interleaved accumulator sets when kTwoSets<E>),
  // then divided by the softmax sum l.
  template <int E, bool kTail>
  static void pv(int cnt, const int32_t* keys, const float* w, const KV* vbase, int64_t vstride, int last,
                 float l, float* y) {
    T a0[E], a1[E];
    for (int e = 0; e < E; ++e) a0[e] = a1[e] = V::zero();
    auto row = [&](const KV* r, int e) {
      return (kTail && e == E - 1) ? ld_n(r + e * L, last) : ld(r + e * L);
    };
    int s = 0;
    for (; !kTwoSets<E> && s < cnt; ++s) {
      const KV* r0 = vbase + keys[s] * vstride;
      const T w0 = V::set1(w[s]);
      for (int e = 0; e < E; ++e) a0[e] = V::fmadd(w0, row(r0, e), a0[e]);
    }
    for (; s + 2 <= cnt; s += 2) {
      const KV* r0 = vbase + keys[s] * vstride;
      const KV* r1 = vbase + keys[s + 1] * vstride;
      const T w0 = V::set1(w[s]), w1 = V::set1(w[s + 1]);
      for (int e = 0; e < E; ++e) {
        a0[e] = V::fmadd(w0, row(r0, e), a0[e]);
        a1[e] = V::fmadd(w1, row(r1, e), a1[e]);
      }
    }
    if (s < cnt) {
      const KV* r0 = vbase + keys[s] * vstride;
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
  static void pv_width(int width, bool tail, int cnt, const int32_t* keys, const float* w, const KV* vbase,
                       int64_t vstride, int last, float l, float* y) {
    if constexpr (E > 0) {
      if (width != E) return pv_width<E - 1>(width, tail, cnt, keys, w, vbase, vstride, last, l, y);
      if (tail) return pv<E, true>(cnt, keys, w, vbase, vstride, last, l, y);
      pv<E, false>(cnt, keys, w, vbase, vstride, last, l, y);
    }
  }

  // The valid slots of an index row (-1 dropped, repeats kept), branch-free: every slot is
  // written, only valid ones advance. Indices are validated here (no separate pass over
  // them): ok becomes false on one outside [-1, Nk). Returns the count.
  static int compact(const AttentionProblem& p, const int32_t* irow, int32_t* keys, bool* ok) {
    int cnt = 0;
    bool good = true;
    for (int64_t s = 0; s < p.kk; ++s) {
      const int32_t j = irow[s * p.is[3]];
      good &= j >= -1 && j < p.Nk;
      keys[cnt] = j;
      cnt += j != -1;  // a repeated key stays: it counts once per occurrence
    }
    *ok = good;
    return cnt;
  }

  // True when every index of a contiguous row lies in [0, Nk) (no -1 slot): one min/max
  // pass, which the compiler vectorises.
  static bool all_valid(const int32_t* irow, int64_t kk, int64_t Nk) {
    int32_t lo = 0, hi = 0;
    for (int64_t s = 0; s < kk; ++s) {
      lo = std::min(lo, irow[s]);
      hi = std::max(hi, irow[s]);
    }
    return lo >= 0 && hi < Nk;
  }

  // Pass 1 for one query: its softmax weights (unnormalised) into w, the sum into *sum, the
  // count of valid slots into *count. False when its index row holds an index outside
  // [-1, Nk).
  static bool weights(const AttentionProblem& p, DotsFn dots, const float* qrow, const int32_t* irow,
                      const KV* kbase, const SparseScratchLayout& lay, float* scratch, float* w, float* sum,
                      int32_t* count) {
    auto* keys = reinterpret_cast<int32_t*>(scratch + lay.keys);
    int32_t* pad = keys + sparse_round16(p.kk);  // L slots after the longest list
    float* q = scratch + lay.q;
    const int32_t* list = keys;
    int cnt = 0;
    if (p.is[3] == 1 && all_valid(irow, p.kk, p.Nk)) {
      list = irow;  // the usual top-k row: read in place, no copy
      cnt = int(p.kk);
    } else {
      bool ok = true;
      cnt = compact(p, irow, keys, &ok);
      if (!ok) return false;
    }
    *count = cnt;
    if (cnt == 0) return true;  // no valid slot: the output row is zeros
    std::memcpy(q, qrow, sizeof(float) * size_t(p.hd));
    for (int64_t d = p.hd; d < (p.hd + L - 1) / L * L; ++d) q[d] = 0.0f;

    const T scale = V::set1(p.scale);
    T mx = V::set1(-__builtin_inff());
    for (int g = 0; g < cnt; g += L) {
      const int32_t* group = list + g;
      if (cnt - g < L) {  // a short last group: a copy repeating its last key, lanes set to -inf
        for (int s = 0; s < L; ++s) pad[s] = list[g + std::min(s, cnt - g - 1)];
        group = pad;
      }
      T lg = V::mul(dots(q, kbase, p.ks[2], group, p.hd), scale);
      if (cnt - g < L) lg = V::keep_first_n(lg, cnt - g);
      V::store(w + g, lg);
      mx = V::max(mx, lg);
    }
    // A NaN logit may be dropped by the max, but it makes its exp, hence l, NaN.
    float m = V::hmax(mx);
    if (m == -__builtin_inff()) m = 0.0f;  // all logits -inf: weights exp(-inf) = 0
    const T shift = V::set1(m);
    T acc = V::zero();
    for (int g = 0; g < cnt; g += L) {
      const T e = V::exp_neg(V::sub(V::load(w + g), shift));
      V::store(w + g, e);
      acc = V::add(acc, e);
    }
    *sum = V::hsum(acc);
    return true;
  }

  // Pass 2 for one query: y = sum of w_s V[key_s] / l. The key list is the index row itself
  // when that is contiguous and has no -1 slot (the usual top-k output), else it is
  // compacted again (pass 1 validated it).
  static void output(const AttentionProblem& p, const int32_t* irow, const KV* vbase, const float* w, float l,
                     int cnt, int32_t* scratch_keys, float* yrow) {
    if (cnt == 0) {
      std::memset(yrow, 0, sizeof(float) * size_t(p.hv));
      return;
    }
    const int32_t* keys = irow;
    if (p.is[3] != 1 || cnt != p.kk) {
      bool ok = true;
      compact(p, irow, scratch_keys, &ok);
      keys = scratch_keys;
    }
    const int nev = int((p.hv + L - 1) / L);
    const int last = int(p.hv - int64_t(nev - 1) * L);
    for (int e0 = 0; e0 < nev; e0 += kPvVecs) {
      const int width = std::min(kPvVecs, nev - e0);
      const bool tail = e0 + width == nev && last < L;
      pv_width<kPvVecs>(width, tail, cnt, keys, w, vbase + e0 * L, p.vs[2], last, l, yrow + e0 * L);
    }
  }

  // Requests the cache lines of a contiguous index row (the next query's, while this one's
  // keys are gathered). Between two rows, pass 1 gathers some 4·kk lines of K at random,
  // which keeps the hardware prefetchers from following the index rows' own sequential
  // stream, so without this fetch each row's first read misses.
  static void fetch_index_row(const AttentionProblem& p, const int32_t* irow) {
    if (p.is[3] != 1) return;
    const auto* c = reinterpret_cast<const char*>(irow);
    for (int64_t o = 0; o < p.kk * int64_t(sizeof(int32_t)); o += 64) V::prefetch(c + o);
  }

  // Work items [begin, end): (b, h, block of sparse_block_q() queries), each in two passes
  // (sparse_attention.h says why). False (at once) when an index is out of range; the
  // outputs are then unspecified. Flattened: everything but the dots (called through a
  // pointer chosen once per run by hd) is inlined into one body, so the per-query loops
  // keep their state in registers.
  [[gnu::flatten]] static bool run(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch) {
    const int64_t kv_bytes = int64_t(sizeof(KV));
    const SparseScratchLayout lay = sparse_scratch_layout(p.Nq, p.Nk, p.kk, p.hd, kv_bytes);
    const int64_t bq = sparse_block_q(p.Nq, p.Nk, p.kk, p.hd, kv_bytes);
    const KV* k = nullptr;
    const KV* v = nullptr;
    if constexpr (std::is_same_v<KV, float>)
      k = p.k, v = p.v;
    else
      k = p.k16, v = p.v16;
    const int64_t nqb = (p.Nq + bq - 1) / bq;
    const DotsFn dots = dots_for(p.hd);
    float* sums = scratch + lay.sums;
    auto* counts = reinterpret_cast<int32_t*>(scratch + lay.counts);
    for (int64_t it = begin; it < end; ++it) {
      const int64_t qblk = it % nqb, bh = it / nqb, h = bh % p.H, b = bh / p.H;
      const KV* kbase = k + b * p.ks[0] + h * p.ks[1];
      const KV* vbase = v + b * p.vs[0] + h * p.vs[1];
      const int32_t* ibase = p.idx + b * p.is[0] + h * p.is[1];
      const int64_t i0 = qblk * bq, iend = std::min(p.Nq, i0 + bq);
      for (int64_t i = i0; i < iend; ++i) {
        if (i + 1 < iend) fetch_index_row(p, ibase + (i + 1) * p.is[2]);
        if (!weights(p, dots, p.q + b * p.qs[0] + h * p.qs[1] + i * p.qs[2], ibase + i * p.is[2], kbase, lay,
                     scratch, scratch + lay.weights + (i - i0) * lay.wstride, sums + (i - i0),
                     counts + (i - i0)))
          return false;
      }
      for (int64_t i = i0; i < iend; ++i)
        output(p, ibase + i * p.is[2], vbase, scratch + lay.weights + (i - i0) * lay.wstride, sums[i - i0],
               counts[i - i0], reinterpret_cast<int32_t*>(scratch + lay.keys),
               p.y + b * p.ys[0] + h * p.ys[1] + i * p.ys[2]);
    }
    return true;
  }
};

}  // namespace
}  // namespace longrun::cpu
