// The flash-style dense attention algorithm, written once against a vector struct V
// (attention_vexp_avx2.h / attention_vexp_avx512.h) and register-tile sizes Cfg. Included
// only by attention_avx2.cpp / attention_avx512.cpp, each of which instantiates it with its
// own types, so every instantiation is compiled with (and only runs on) its ISA.
//
// One work item = (b, h, block of up to kAttnBlockQ queries). Layout choices, and why:
//  - Q is packed transposed (Qt[d][i], pre-padded with zeros to whole vectors), so the logit
//    tile is computed as S^T[j][i-vector] += K[j][d] (broadcast) * Qt[d][i-vector]: K rows are
//    read in place (any key subset, via a list of key indices), and the softmax statistics
//    of a query live in one lane: the max and sum over keys are vertical vector ops.
//  - V rows of the key block are read in place when hv is whole vectors and the keys are
//    consecutive, else packed (zero-padded to whole vectors), so that the P V tile needs no
//    tail masking; P V is O[i][e-vector] += P^T[j][i] (broadcast) * Vp[j][e-vector].
//  - bf16 K and V (a bf16 KV cache) are widened exactly to f32 once per key block: K rows
//    into a packed block (the tile reads them as f32 rows), V rows into the packed V. The
//    widening is O(block * (hd + hv)) per 64 queries; the arithmetic is then the f32 one.
//  - Masked keys are never multiplied: a padding mask removes keys from the key list, and a
//    causal mask leaves each query a prefix of that list (its visible count nvis[i]); the
//    P V step stops every row at its own count, so no masked V row meets a zero weight.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cpu/attention.h"

namespace longrun::cpu {
namespace {  // internal linkage: each ISA file owns its instantiations

template <class V, class Cfg>
struct FlashAttention {
  using T = typename V::T;
  static constexpr int L = V::L;
  static constexpr int BQ = kAttnBlockQ;
  static constexpr int BK = kAttnBlockK;
  static_assert(BQ % L == 0 && BQ / L >= Cfg::kQkVecs);

  // ---- S^T = scale * K Q^T: R keys x QV query vectors per register tile.
  template <int R, int QV>
  static void qk_tile(const float* const* kr, const float* qt, int64_t hd, float scale, float* st) {
    T acc[R][QV];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < QV; ++c) acc[r][c] = V::zero();
    for (int64_t d = 0; d < hd; ++d) {
      T qv[QV];
      for (int c = 0; c < QV; ++c) qv[c] = V::load(qt + d * BQ + c * L);
      for (int r = 0; r < R; ++r) {
        const T kb = V::set1(kr[r][d]);
        for (int c = 0; c < QV; ++c) acc[r][c] = V::fmadd(kb, qv[c], acc[r][c]);
      }
    }
    const T sc = V::set1(scale);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < QV; ++c) V::store(st + r * BQ + c * L, V::mul(acc[r][c], sc));
  }
  // The last n < Cfg::kQkKeys keys of a block, with a tile of exactly n rows.
  template <int R, int QV>
  static void qk_tail(int n, const float* const* kr, const float* qt, int64_t hd, float scale, float* st) {
    if constexpr (R > 0) {
      if (n == R) return qk_tile<R, QV>(kr, qt, hd, scale, st);
      qk_tail<R - 1, QV>(n, kr, qt, hd, scale, st);
    }
  }
  template <int QV>
  static void qk_keys(int kb, const float* const* kr, const float* qt, int64_t hd, float scale, float* st) {
    constexpr int R = Cfg::kQkKeys;
    int j = 0;
    for (; j + R <= kb; j += R) qk_tile<R, QV>(kr + j, qt, hd, scale, st + j * BQ);
    qk_tail<R - 1, QV>(kb - j, kr + j, qt, hd, scale, st + j * BQ);
  }
  // A group of qv <= Cfg::kQkVecs query vectors, dispatched to the tile of that width.
  template <int QV>
  static void qk_vecs(int qv, int kb, const float* const* kr, const float* qt, int64_t hd, float scale,
                      float* st) {
    if constexpr (QV > 0) {
      if (qv == QV) return qk_keys<QV>(kb, kr, qt, hd, scale, st);
      qk_vecs<QV - 1>(qv, kb, kr, qt, hd, scale, st);
    }
  }
  static void qk_block(int nqv, int kb, const float* const* kr, const float* qt, int64_t hd, float scale,
                       float* st) {
    for (int c0 = 0; c0 < nqv; c0 += Cfg::kQkVecs)
      qk_vecs<Cfg::kQkVecs>(std::min(Cfg::kQkVecs, nqv - c0), kb, kr, qt + c0 * L, hd, scale, st + c0 * L);
  }

  // ---- Online softmax over one key block: per query lane, the new running max, the
  // rescale factor alpha = exp(m_old - m_new) of everything accumulated so far, P = exp(S -
  // m_new) in place of S, and the running sum l = l * alpha + sum(P). With `masked`, keys a
  // query cannot see get P = 0 (and are skipped later by P V anyway).
  static void softmax_block(int nqv, int kb, int j0, bool masked, const int32_t* nvis, float* st, float* m,
                            float* l, float* alpha) {
    for (int c = 0; c < nqv; ++c) {
      float* col = st + c * L;
      const T m_old = V::load(m + c * L);
      T mx = m_old;
      if (masked) {
        for (int j = 0; j < kb; ++j) {
          const T s = V::mask_invisible(V::load(col + j * BQ), nvis + c * L, j0 + j);
          V::store(col + j * BQ, s);
          mx = V::max(mx, s);
        }
      } else {
        for (int j = 0; j < kb; ++j) mx = V::max(mx, V::load(col + j * BQ));
      }
      // A lane that has seen no finite logit keeps m = -inf; shifting by 0 there keeps
      // exp(S - shift) at 0 rather than NaN.
      const T shift = V::neg_inf_to_zero(mx);
      T sum = V::zero();
      for (int j = 0; j < kb; ++j) {  // S - shift <= 0 (or NaN): exp_neg's domain
        const T pj = V::exp_neg(V::sub(V::load(col + j * BQ), shift));
        V::store(col + j * BQ, pj);
        sum = V::add(sum, pj);
      }
      const T a = V::exp_neg(V::sub(m_old, shift));
      V::store(alpha + c * L, a);
      V::store(l + c * L, V::fmadd(V::load(l + c * L), a, sum));
      V::store(m + c * L, mx);
    }
  }

  // The V rows of a key block: row j at at + j * ld (packed, or read in place).
  struct VRows {
    const float* at;
    int64_t ld;
    VRows shift(int64_t e) const { return {at + e, ld}; }
  };

  // ---- O += P V: R query rows x E vectors of hv per register tile, keys [jb, je).
  template <int R, int E>
  static void pv_tile(float* o, int64_t ldo, const float* p, VRows vp, int jb, int je) {
    T acc[R][E];
    for (int r = 0; r < R; ++r)
      for (int e = 0; e < E; ++e) acc[r][e] = V::load(o + r * ldo + e * L);
    for (int j = jb; j < je; ++j) {
      T vv[E];
      for (int e = 0; e < E; ++e) vv[e] = V::load(vp.at + j * vp.ld + e * L);
      for (int r = 0; r < R; ++r) {
        const T pb = V::set1(p[j * BQ + r]);
        for (int e = 0; e < E; ++e) acc[r][e] = V::fmadd(pb, vv[e], acc[r][e]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int e = 0; e < E; ++e) V::store(o + r * ldo + e * L, acc[r][e]);
  }
  // All nev vectors of R rows: full groups of Cfg::kPvVecs, then one narrower group.
  template <int R>
  static void pv_rows(int nev, float* o, int64_t ldo, const float* p, VRows vp, int jb, int je) {
    constexpr int E = Cfg::kPvVecs;
    int e0 = 0;
    for (; e0 + E <= nev; e0 += E) pv_tile<R, E>(o + e0 * L, ldo, p, vp.shift(e0 * L), jb, je);
    pv_cols<R, E - 1>(nev - e0, o + e0 * L, ldo, p, vp.shift(e0 * L), jb, je);
  }
  template <int R, int E>
  static void pv_cols(int n, float* o, int64_t ldo, const float* p, VRows vp, int jb, int je) {
    if constexpr (E > 0) {
      if (n == E) return pv_tile<R, E>(o, ldo, p, vp, jb, je);
      pv_cols<R, E - 1>(n, o, ldo, p, vp, jb, je);
    }
  }
  // R rows whose visible key counts in this block are vis[0..R): the common prefix as one
  // tile, then each row's own remainder alone.
  template <int R>
  static void pv_group(int nev, float* o, int64_t ldo, const float* p, VRows vp, const int* vis) {
    int common = vis[0];
    for (int r = 1; r < R; ++r) common = std::min(common, vis[r]);
    if (common > 0) pv_rows<R>(nev, o, ldo, p, vp, 0, common);
    for (int r = 0; r < R; ++r)
      if (vis[r] > common) pv_rows<1>(nev, o + r * ldo, ldo, p + r, vp, common, vis[r]);
  }
  template <int R>
  static void pv_group_tail(int n, int nev, float* o, int64_t ldo, const float* p, VRows vp, const int* vis) {
    if constexpr (R > 0) {
      if (n == R) return pv_group<R>(nev, o, ldo, p, vp, vis);
      pv_group_tail<R - 1>(n, nev, o, ldo, p, vp, vis);
    }
  }
  static void pv_block(int rows, int nev, float* o, int64_t ldo, const float* p, VRows vp, const int* vis) {
    constexpr int R = Cfg::kPvRows;
    int r = 0;
    for (; r + R <= rows; r += R) pv_group<R>(nev, o + r * ldo, ldo, p + r, vp, vis + r);
    pv_group_tail<R - 1>(rows - r, nev, o + r * ldo, ldo, p + r, vp, vis + r);
  }

  // dst[0, padded) = the n bf16 values of src widened, then zeros (padded: whole vectors).
  static void widen_row(const uint16_t* src, int64_t n, float* dst, int64_t padded) {
    int64_t e = 0;
    for (; e + L <= n; e += L) V::store(dst + e, V::load_bf16(src + e));
    if (e < n) {
      V::store(dst + e, V::load_bf16_n(src + e, int(n - e)));
      e += L;
    }
    for (; e < padded; e += L) V::store(dst + e, V::zero());
  }

  // ---- One work item: queries [i0, i0 + rows) of (b, h), keys keys[0..nk).
  // Rows to prefetch while this item packs its queries: up to 5 tensors' rows [0, count),
  // row r of each fetched with query row r (the next axial column; see run_axial).
  struct PrefetchRows {
    const float* base[5] = {};
    int64_t ld[5] = {}, width[5] = {};
    int n = 0;
    int64_t count = 0;
  };
  static void item(const AttentionProblem& p, int64_t b, int64_t h, int64_t i0, int rows, const int32_t* keys,
                   int64_t nk, const AttentionScratchLayout& lay, float* scratch,
                   const PrefetchRows* pf = nullptr) {
    const int64_t hd = p.hd, hv = p.hv;
    const int nqv = (rows + L - 1) / L;
    const int nev = int((hv + L - 1) / L);
    const int64_t ldo = attention_hv_pad(hv);
    float* qt = scratch + lay.qt;
    float* st = scratch + lay.s;
    float* o = scratch + lay.o;
    float* vp = scratch + lay.vp;
    float* m = scratch + lay.m;
    float* l = scratch + lay.l;
    float* alpha = scratch + lay.alpha;
    auto* nvis = reinterpret_cast<int32_t*>(scratch + lay.nvis);

    const float* qb = p.q + b * p.qs[0] + h * p.qs[1] + i0 * p.qs[2];
    // f32 K and V are read in place; bf16 ones (kv16) are widened block by block.
    const bool kv16 = p.k16 != nullptr;
    const float* kbase = kv16 ? nullptr : p.k + b * p.ks[0] + h * p.ks[1];
    const float* vbase = kv16 ? nullptr : p.v + b * p.vs[0] + h * p.vs[1];
    const uint16_t* kbase16 = kv16 ? p.k16 + b * p.ks[0] + h * p.ks[1] : nullptr;
    const uint16_t* vbase16 = kv16 ? p.v16 + b * p.vs[0] + h * p.vs[1] : nullptr;
    float* kp = scratch + lay.kp;
    const int64_t ldk = attention_hd_pad(hd);
    float* yb = p.y + b * p.ys[0] + h * p.ys[1] + i0 * p.ys[2];

    // Qt[d][i], zero in the padding lanes of the last vector: whole vectors of queries by
    // strided gathers, the rest row by row (each row read contiguously: the rows may be far
    // apart, a column of axial_attention).
    int gathered = 0;
    if (p.qs[2] <= INT32_MAX / L) {
      for (; gathered + L <= rows; gathered += L)
        for (int64_t d = 0; d < hd; ++d)
          V::store(qt + d * BQ + gathered, V::gather(qb + gathered * p.qs[2] + d, int32_t(p.qs[2])));
    }
    for (int i = 0; i < rows; ++i) {
      const float* src = qb + i * p.qs[2];
      if (i >= gathered)
        for (int64_t d = 0; d < hd; ++d) qt[d * BQ + i] = src[d];
      if (pf != nullptr && i < pf->count)
        for (int t = 0; t < pf->n; ++t)
          for (int64_t e = 0; e < pf->width[t]; e += 16)
            __builtin_prefetch(pf->base[t] + i * pf->ld[t] + e, 0, 3);
    }
    for (int64_t d = 0; d < hd; ++d)
      for (int i = rows; i < nqv * L; ++i) qt[d * BQ + i] = 0.0f;
    // Visible keys per query: a prefix of the key list (ascending key indices).
    for (int i = 0; i < rows; ++i) {
      int64_t n = nk;
      if (p.causal) {
        const int64_t limit = i0 + i + p.causal_offset;  // key j visible iff j <= limit
        n = std::upper_bound(keys, keys + nk, limit < 0 ? int64_t(-1) : limit,
                             [](int64_t x, int32_t key) { return x < key; }) -
            keys;
      }
      nvis[i] = int32_t(n);
    }
    for (int i = rows; i < nqv * L; ++i) nvis[i] = nvis[rows - 1];
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < nqv * L; ++i) {
      m[i] = kNegInf;
      l[i] = 0.0f;
    }
    std::memset(o, 0, sizeof(float) * size_t(rows) * size_t(ldo));
    if (p.lse_in != nullptr) {
      // Continue a softmax: y = O / l with l = 1 and max m = its log-sum-exp, so later keys
      // rescale it exactly as they would the unnormalised sums.
      const float* lse = p.lse_in + b * p.ls[0] + h * p.ls[1] + i0 * p.ls[2];
      const float* src = p.y_in != nullptr ? p.y_in + b * p.yis[0] + h * p.yis[1] + i0 * p.yis[2] : yb;
      const int64_t src_ld = p.y_in != nullptr ? p.yis[2] : p.ys[2];
      for (int i = 0; i < rows; ++i) {
        if (lse[i * p.ls[2]] == kNegInf) continue;  // nothing seen yet: O = 0, l = 0
        m[i] = lse[i * p.ls[2]];
        l[i] = 1.0f;
        std::memcpy(o + i * ldo, src + i * src_ld, sizeof(float) * size_t(hv));
      }
    }

    const int64_t nk_used = nvis[rows - 1];  // rows are ascending: the last sees the most
    const float* kr[BK];
    int vis[BQ];
    for (int64_t j0 = 0; j0 < nk_used; j0 += BK) {
      const int kb = int(std::min<int64_t>(BK, nk_used - j0));
      if (kv16) {
        for (int j = 0; j < kb; ++j) {
          widen_row(kbase16 + keys[j0 + j] * p.ks[2], hd, kp + j * ldk, (hd + L - 1) / L * L);
          kr[j] = kp + j * ldk;
        }
      } else {
        for (int j = 0; j < kb; ++j) kr[j] = kbase + keys[j0 + j] * p.ks[2];
      }
      // V rows in place when they are f32, whole vectors and the block's keys consecutive (no
      // padding mask in it); else packed (bf16: widened), zero-padded to whole vectors.
      VRows vrows{vp, ldo};
      if (kv16) {
        for (int j = 0; j < kb; ++j)
          widen_row(vbase16 + keys[j0 + j] * p.vs[2], hv, vp + j * ldo, int64_t(nev) * L);
      } else if (hv % L == 0 && keys[j0 + kb - 1] - keys[j0] == kb - 1) {
        vrows = {vbase + keys[j0] * p.vs[2], p.vs[2]};
      } else {
        for (int j = 0; j < kb; ++j) {
          float* dst = vp + j * ldo;
          std::memcpy(dst, vbase + keys[j0 + j] * p.vs[2], sizeof(float) * size_t(hv));
          for (int64_t e = hv; e < int64_t(nev) * L; ++e) dst[e] = 0.0f;
        }
      }
      const bool masked = j0 + kb > nvis[0];
      qk_block(nqv, kb, kr, qt, hd, p.scale, st);
      softmax_block(nqv, kb, int(j0), masked, nvis, st, m, l, alpha);
      for (int i = 0; i < rows; ++i) {
        vis[i] = int(std::clamp<int64_t>(nvis[i] - j0, 0, kb));
        const float a = alpha[i];
        if (a != 1.0f) {
          float* orow = o + i * ldo;
          for (int e = 0; e < nev; ++e) V::store(orow + e * L, V::mul(V::load(orow + e * L), V::set1(a)));
        }
      }
      pv_block(rows, nev, o, ldo, st, vrows, vis);
    }

    // y = O / l. l == 0 means every weight was 0 (no visible key, or all logits -inf): then
    // O is the exact sum of those zero-weighted terms (0, or NaN from 0 * inf), as in the
    // reference.
    if (p.lse_out != nullptr) {
      float* lse = p.lse_out + b * p.ls[0] + h * p.ls[1] + i0 * p.ls[2];
      for (int i = 0; i < rows; ++i)
        lse[i * p.ls[2]] = l[i] == 0.0f ? kNegInf : m[i] + std::log(l[i]);  // NaN stays NaN
    }
    for (int i = 0; i < rows; ++i) {
      const float li = l[i];
      const float* orow = o + i * ldo;
      float* yrow = yb + i * p.ys[2];
      const T lv = V::set1(li);
      int64_t e = 0;
      for (; e + L <= hv; e += L) {
        const T x = V::load(orow + e);
        V::store(yrow + e, li == 0.0f ? x : V::div(x, lv));
      }
      if (e < hv) {
        const T x = V::load(orow + e);
        V::store_n(yrow + e, li == 0.0f ? x : V::div(x, lv), int(hv - e));
      }
    }
  }

  // Work items [begin, end) with one chunk's scratch. The key list (all keys, or those the
  // padding mask keeps, ascending) is rebuilt only when the batch changes.
  static bool run(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch) {
    const AttentionScratchLayout lay = attention_scratch_layout(p.Nk, p.hd, p.hv, p.k16 != nullptr);
    auto* keys = reinterpret_cast<int32_t*>(scratch + lay.keys);
    const int64_t nqb = (p.Nq + BQ - 1) / BQ;
    int64_t keys_b = -1, nk = 0;
    for (int64_t it = begin; it < end; ++it) {
      const int64_t qblk = it % nqb, bh = it / nqb, h = bh % p.H, b = bh / p.H;
      if (keys_b < 0 || (p.mask != nullptr && keys_b != b)) {
        nk = 0;
        for (int64_t j = 0; j < p.Nk; ++j)
          if (p.mask == nullptr || p.mask[b * p.ms[0] + j * p.ms[1]] != 0) keys[nk++] = int32_t(j);
        keys_b = b;
      }
      const int64_t i0 = qblk * BQ;
      item(p, b, h, i0, int(std::min<int64_t>(BQ, p.Nq - i0)), keys, nk, lay, scratch);
    }
    return true;
  }

  // The sub-problem of axial item `it` of `pass`: its line (row u or column t) as a strided
  // [B, H, len, .] problem, and the item's query block.
  struct AxialItem {
    AttentionProblem p;
    int64_t b = 0, h = 0, i0 = 0, first = 0, step = 1;
    int rows = 0;
  };
  static AxialItem axial_item(const AxialProblem& a, int pass, int64_t it) {
    const AttentionProblem& w = a.whole;
    const int64_t s = a.segment, n = a.rows;
    const int64_t len = pass == 0 ? s : n, nqb = (len + BQ - 1) / BQ, lines = pass == 0 ? n : s;
    const int64_t qblk = it % nqb, line = (it / nqb) % lines, bh = it / nqb / lines;
    AxialItem x;
    x.h = bh % w.H, x.b = bh / w.H;
    x.i0 = qblk * BQ;
    x.rows = int(std::min<int64_t>(BQ, len - x.i0));
    // Position of element e of this line: first + e * step.
    x.first = pass == 0 ? line * s : line, x.step = pass == 0 ? 1 : s;
    AttentionProblem& p = x.p;
    p = w;
    p.Nq = p.Nk = len;
    p.q = w.q + x.first * w.qs[2];
    p.y = w.y + x.first * w.ys[2];
    p.qs[2] = x.step * w.qs[2];
    p.ys[2] = x.step * w.ys[2];
    p.ls[0] = w.H * w.Nq, p.ls[1] = w.Nq, p.ls[2] = x.step;  // pass 0's lse
    if (pass == 0) {
      p.k = w.k + x.first * w.ks[2];
      p.v = w.v + x.first * w.vs[2];
      p.causal_offset = 0;
      p.lse_out = a.lse + x.first;
      return x;
    }
    p.k = a.ksum + x.first * a.kss[2], p.ks[0] = a.kss[0], p.ks[1] = a.kss[1], p.ks[2] = x.step * a.kss[2];
    p.v = a.vsum + x.first * a.vss[2], p.vs[0] = a.vss[0], p.vs[1] = a.vss[1], p.vs[2] = x.step * a.vss[2];
    p.causal_offset = -1;
    p.lse_in = a.lse + x.first;
    if (a.y0 != nullptr) {  // a given direct state
      p.lse_in = a.lse0 + x.first * a.lse0s[2];
      p.ls[0] = a.lse0s[0], p.ls[1] = a.lse0s[1], p.ls[2] = x.step * a.lse0s[2];
      p.y_in = a.y0 + x.first * a.y0s[2];
      p.yis[0] = a.y0s[0], p.yis[1] = a.y0s[1], p.yis[2] = x.step * a.y0s[2];
    }
    return x;
  }
  // A column's rows are a segment apart (pages apart at model sizes), which the hardware
  // prefetcher does not follow: the next item's q, K, V and state rows are fetched while
  // this item packs its queries, one row of each per query row.
  static PrefetchRows column_rows(const AxialItem& x) {
    const AttentionProblem& p = x.p;
    PrefetchRows f;
    const int64_t b = x.b, h = x.h;
    auto add = [&](const float* base, int64_t ld, int64_t width) {
      f.base[f.n] = base, f.ld[f.n] = ld, f.width[f.n] = width, ++f.n;
    };
    add(p.q + b * p.qs[0] + h * p.qs[1] + x.i0 * p.qs[2], p.qs[2], p.hd);
    add(p.k + b * p.ks[0] + h * p.ks[1] + x.i0 * p.ks[2], p.ks[2], p.hd);
    add(p.v + b * p.vs[0] + h * p.vs[1] + x.i0 * p.vs[2], p.vs[2], p.hv);
    if (p.y_in != nullptr) add(p.y_in + b * p.yis[0] + h * p.yis[1] + x.i0 * p.yis[2], p.yis[2], p.hv);
    add(p.y + b * p.ys[0] + h * p.ys[1] + x.i0 * p.ys[2], p.ys[2], p.hv);  // written: fetched for it
    f.count = x.rows;
    return f;
  }

  // axial_attention items [begin, end) of one pass (attention.h). Each item is a dense item
  // of a strided sub-problem: pass 0 = row u's queries on row u's keys (causal: j <= t),
  // pass 1 = column t's queries on column t's slots (causal: r < u, i.e. offset -1), which
  // continues from pass 0's output and log-sum-exp (or the given direct state). The key
  // list holds the unpadded positions of that row or column.
  static void run_axial(const AxialProblem& a, int pass, int64_t begin, int64_t end, float* scratch) {
    const AttentionProblem& w = a.whole;
    const AttentionScratchLayout lay = attention_scratch_layout(std::max(a.segment, a.rows), w.hd, w.hv);
    auto* keys = reinterpret_cast<int32_t*>(scratch + lay.keys);
    for (int64_t it = begin; it < end; ++it) {
      const AxialItem x = axial_item(a, pass, it);
      PrefetchRows next;
      if (pass == 1 && it + 1 < end) next = column_rows(axial_item(a, pass, it + 1));
      int64_t nk = 0;
      for (int64_t j = 0; j < x.p.Nk; ++j)
        if (w.mask == nullptr || w.mask[x.b * w.ms[0] + (x.first + j * x.step) * w.ms[1]] != 0)
          keys[nk++] = int32_t(j);
      item(x.p, x.b, x.h, x.i0, x.rows, keys, nk, lay, scratch, next.n > 0 ? &next : nullptr);
    }
  }
};

}  // namespace
}  // namespace longrun::cpu
