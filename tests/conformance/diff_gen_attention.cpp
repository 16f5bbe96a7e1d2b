// Differential cases of attention (head dims and sequence lengths around the vector widths
// and key blocks, causal with Nq <= Nk and Nq > Nk, key padding with fully padded batches,
// model shapes), sparse_attention (unused slots, repeats, broadcast indices, rows with
// no valid index, out-of-range indices) and axial_attention (segment 1 and segment = N,
// segments and row counts around the 64-query/64-key blocks, key padding, model shapes;
// the same with has_direct_state, lse0 with -inf entries). attention and sparse_attention
// also run with bf16 K and V (a bf16 KV cache) on the same kinds of shapes.
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "conformance/diff_case.h"

namespace longrun::conformance::diff {
namespace {

float scale_or_default(float scale, int64_t hd) {  // 0: 1/sqrt(hd)
  return scale != 0 ? scale : float(1.0 / std::sqrt(double(hd)));
}

// A key padding mask [B, N]: padding 1: tail padding per batch (positions >= valid); 2: batch 0
// fully padded, the others random (keep 0.6).
HostTensor padding_mask(Rng& r, int64_t B, int64_t N, int padding) {
  HostTensor m = zeros(DType::u8, {B, N});
  for (int64_t b = 0; b < B; ++b) {
    const int64_t valid = 1 + (b * 7 + N / 2) % N;
    for (int64_t j = 0; j < N; ++j) {
      bool attend = j < valid;
      if (padding == 2) attend = b == 0 ? false : r.chance(0.6);
      set(m, b * N + j, attend ? 1 : 0);
    }
  }
  return m;
}

// The case name's tail: "_causal", "_pad<padding>".
std::string flags_suffix(bool causal, int padding) {
  std::string s;
  if (causal) s += "_causal";
  if (padding) s += "_pad" + std::to_string(padding);
  return s;
}

struct Att {
  int64_t B = 1, H = 1, Nq = 1, Nk = 1, hd = 1, hv = 1;
  bool causal = false;
  int padding = 0;  // 0: none; 1: tail padding per batch; 2: batch 0 fully padded, others random
  float scale = 0;  // 0: 1/sqrt(hd)
  Fill fill = kUniform;
  DType kv = DType::f32;  // K and V dtype (bf16: the values drawn, rounded to bf16)
};

void add_att(CaseList& L, const std::string& tag, const Att& a) {
  Rng& r = L.rng();
  const float scale = scale_or_default(a.scale, a.hd);
  AttentionAttrs attrs{.scale = scale, .causal = a.causal, .has_key_padding_mask = a.padding != 0};
  std::vector<HostTensor> in{random(r, DType::f32, {a.B, a.H, a.Nq, a.hd}, a.fill),
                             random(r, a.kv, {a.B, a.H, a.Nk, a.hd}, a.fill),
                             random(r, a.kv, {a.B, a.H, a.Nk, a.hv}, a.fill)};
  if (a.padding) in.push_back(padding_mask(r, a.B, a.Nk, a.padding));
  const std::string name = (a.kv == DType::bf16 ? "bf16kv_" : "") + tag + "_b" + std::to_string(a.B) + "h" +
                           std::to_string(a.H) + "_q" + std::to_string(a.Nq) + "k" + std::to_string(a.Nk) +
                           "_hd" + std::to_string(a.hd) + "hv" + std::to_string(a.hv) +
                           flags_suffix(a.causal, a.padding);
  DiffCase& c = L.add(name, attrs, std::move(in));
  if (a.kv == DType::bf16) c.may_refuse = "bf16";  // the cuda backend reads f32 K/V only
}

// axial_attention: N = n * segment positions; q, k, ks [B, H, N, hd], v, vs [B, H, N, hv].
struct Axial {
  int64_t B = 1, H = 1, segment = 1, n = 1, hd = 1, hv = 1;
  bool causal = false;
  int padding = 0;  // as Att: 1 tail padding per batch; 2 batch 0 fully padded, others random
  float scale = 0;  // 0: 1/sqrt(hd)
  Fill fill = kUniform;
};

std::string axial_name(const std::string& tag, const Axial& a) {
  return tag + "_b" + std::to_string(a.B) + "h" + std::to_string(a.H) + "_s" + std::to_string(a.segment) +
         "n" + std::to_string(a.n) + "_hd" + std::to_string(a.hd) + "hv" + std::to_string(a.hv) +
         flags_suffix(a.causal, a.padding);
}

void add_axial(CaseList& L, const std::string& tag, const Axial& a) {
  Rng& r = L.rng();
  const int64_t N = a.segment * a.n;
  const float scale = scale_or_default(a.scale, a.hd);
  AxialAttentionAttrs attrs{
      .scale = scale, .segment = a.segment, .causal = a.causal, .has_key_padding_mask = a.padding != 0};
  std::vector<HostTensor> in{
      random(r, DType::f32, {a.B, a.H, N, a.hd}, a.fill), random(r, DType::f32, {a.B, a.H, N, a.hd}, a.fill),
      random(r, DType::f32, {a.B, a.H, N, a.hv}, a.fill), random(r, DType::f32, {a.B, a.H, N, a.hd}, a.fill),
      random(r, DType::f32, {a.B, a.H, N, a.hv}, a.fill)};
  if (a.padding) in.push_back(padding_mask(r, a.B, N, a.padding));
  L.add(axial_name(tag, a), attrs, std::move(in));
}

// axial_attention with has_direct_state: inputs q, y0 [B, H, N, hv], lse0 [B, H, N], ks, vs
// [, mask]. lse0 is uniform in lse (an attention log-sum-exp over a few dozen O(1) logits lies
// there) with probability dead of -inf (no direct key).
struct DirectState {
  Axial a;
  double lse_lo = -3.0, lse_hi = 6.0;
  double dead = 0.2;
  bool hidden_nan = false;  // NaN in y0 where lse0 = -inf and in ks / vs at padded positions
};

void add_axial_direct(CaseList& L, const std::string& tag, const DirectState& d) {
  const Axial& a = d.a;
  Rng& r = L.rng();
  const int64_t N = a.segment * a.n;
  const float scale = scale_or_default(a.scale, a.hd);
  AxialAttentionAttrs attrs{.scale = scale,
                            .segment = a.segment,
                            .causal = a.causal,
                            .has_key_padding_mask = a.padding != 0,
                            .has_direct_state = true};
  const Fill lse{.lo = d.lse_lo, .hi = d.lse_hi, .neg_inf = d.dead};
  std::vector<HostTensor> in{
      random(r, DType::f32, {a.B, a.H, N, a.hd}, a.fill), random(r, DType::f32, {a.B, a.H, N, a.hv}, a.fill),
      random(r, DType::f32, {a.B, a.H, N}, lse), random(r, DType::f32, {a.B, a.H, N, a.hd}, a.fill),
      random(r, DType::f32, {a.B, a.H, N, a.hv}, a.fill)};
  if (a.padding) in.push_back(padding_mask(r, a.B, N, a.padding));
  if (d.hidden_nan) {  // values no slot may read: the output must stay NaN-free
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int64_t row = 0; row < a.B * a.H * N; ++row) {
      if (get(in[2], row) == -std::numeric_limits<double>::infinity())
        for (int64_t e = 0; e < a.hv; ++e) set(in[1], row * a.hv + e, nan);
      const int64_t b = row / (a.H * N), pos = row % N;
      if (a.padding && get(in[5], b * N + pos) == 0) {
        for (int64_t e = 0; e < a.hd; ++e) set(in[3], row * a.hd + e, nan);
        for (int64_t e = 0; e < a.hv; ++e) set(in[4], row * a.hv + e, nan);
      }
    }
  }
  L.add(axial_name(tag, a), attrs, std::move(in));
}

}  // namespace

void generate_attention(CaseList& L) {
  int i = 0;
  // Sequence lengths across the key/query block sizes, head dims across the vector widths.
  const int64_t hds[] = {1, 7, 8, 16, 17, 32, 33, 64, 65};
  for (int64_t n : kSizes) {
    const int64_t hd = hds[size_t(i) % std::size(hds)];
    add_att(L, "n", {.B = 1, .H = i % 2 ? 2 : 1, .Nq = n, .Nk = n, .hd = hd, .hv = hd, .causal = i % 3 == 1});
    ++i;
  }
  for (int64_t hd : hds) add_att(L, "hd", {.B = 2, .H = 1, .Nq = 9, .Nk = 33, .hd = hd, .hv = hd});
  add_att(L, "hv", {.B = 1, .H = 2, .Nq = 17, .Nk = 31, .hd = 16, .hv = 5});
  add_att(L, "hv", {.B = 1, .H = 1, .Nq = 8, .Nk = 65, .hd = 8, .hv = 33});
  // Causal with Nq < Nk (decode: queries see a prefix of the keys) and Nq > Nk (the first
  // Nq - Nk queries see no key: zeros).
  add_att(L, "causal", {.B = 1, .H = 2, .Nq = 1, .Nk = 129, .hd = 16, .hv = 16, .causal = true});
  add_att(L, "causal", {.B = 1, .H = 1, .Nq = 5, .Nk = 33, .hd = 8, .hv = 8, .causal = true});
  add_att(L, "causal", {.B = 2, .H = 1, .Nq = 33, .Nk = 17, .hd = 16, .hv = 16, .causal = true});
  // Across the 64-query and 64-key blocks.
  add_att(L, "causal", {.B = 1, .H = 1, .Nq = 100, .Nk = 257, .hd = 32, .hv = 32, .causal = true});
  add_att(L, "causal", {.B = 1, .H = 1, .Nq = 200, .Nk = 130, .hd = 16, .hv = 16, .causal = true});
  // Key padding: tail padding, fully padded batch (zeros), combined with causal.
  add_att(L, "pad", {.B = 3, .H = 2, .Nq = 17, .Nk = 33, .hd = 16, .hv = 16, .padding = 1});
  add_att(L, "pad", {.B = 2, .H = 2, .Nq = 9, .Nk = 64, .hd = 32, .hv = 32, .padding = 2});
  add_att(L, "pad", {.B = 2, .H = 1, .Nq = 31, .Nk = 31, .hd = 8, .hv = 8, .causal = true, .padding = 1});
  add_att(L, "pad", {.B = 2, .H = 1, .Nq = 65, .Nk = 200, .hd = 64, .hv = 64, .padding = 2});
  // Large logits (softmax range), signed zeros/ties/subnormals, a long key sequence.
  add_att(L, "big_logits",
          {.B = 1, .H = 1, .Nq = 16, .Nk = 40, .hd = 16, .hv = 16, .scale = 4.0f, .fill = {-2, 2}});
  add_att(L, "finite", {.B = 1, .H = 2, .Nq = 15, .Nk = 17, .hd = 16, .hv = 16, .fill = kFinite});
  add_att(L, "long", {.B = 1, .H = 1, .Nq = 3, .Nk = 2048, .hd = 64, .hv = 64});
  // Model-shaped: 257 tokens, head dim 64.
  add_att(L, "model", {.B = 1, .H = 2, .Nq = 257, .Nk = 257, .hd = 64, .hv = 64});
  add_att(L, "model",
          {.B = 1, .H = 1, .Nq = 257, .Nk = 257, .hd = 64, .hv = 64, .causal = true, .padding = 1});

  // bf16 K and V: head dims across the vector widths (odd ones: partial widening loads),
  // Nk not a multiple of the 64-key block, causal (Nq < Nk: decode; Nq > Nk), key padding
  // with a fully padded batch, large logits, and a model-shaped decode step on a long cache.
  constexpr DType bf = DType::bf16;
  for (int64_t hd : hds) add_att(L, "hd", {.B = 2, .H = 1, .Nq = 9, .Nk = 33, .hd = hd, .hv = hd, .kv = bf});
  add_att(L, "hv", {.B = 1, .H = 2, .Nq = 17, .Nk = 31, .hd = 16, .hv = 5, .kv = bf});
  add_att(L, "hv", {.B = 1, .H = 1, .Nq = 8, .Nk = 65, .hd = 7, .hv = 33, .kv = bf});
  add_att(L, "n", {.B = 1, .H = 2, .Nq = 63, .Nk = 63, .hd = 17, .hv = 17, .kv = bf});
  add_att(L, "n", {.B = 1, .H = 1, .Nq = 130, .Nk = 130, .hd = 33, .hv = 33, .causal = true, .kv = bf});
  add_att(L, "causal", {.B = 1, .H = 2, .Nq = 1, .Nk = 129, .hd = 16, .hv = 16, .causal = true, .kv = bf});
  add_att(L, "causal", {.B = 2, .H = 1, .Nq = 33, .Nk = 17, .hd = 16, .hv = 16, .causal = true, .kv = bf});
  add_att(L, "causal", {.B = 1, .H = 1, .Nq = 100, .Nk = 257, .hd = 32, .hv = 32, .causal = true, .kv = bf});
  add_att(L, "pad", {.B = 3, .H = 2, .Nq = 17, .Nk = 33, .hd = 16, .hv = 16, .padding = 1, .kv = bf});
  add_att(L, "pad", {.B = 2, .H = 2, .Nq = 9, .Nk = 64, .hd = 32, .hv = 32, .padding = 2, .kv = bf});
  add_att(L, "pad",
          {.B = 2, .H = 1, .Nq = 31, .Nk = 31, .hd = 8, .hv = 8, .causal = true, .padding = 1, .kv = bf});
  add_att(L, "pad", {.B = 2, .H = 1, .Nq = 65, .Nk = 200, .hd = 65, .hv = 65, .padding = 2, .kv = bf});
  add_att(L, "big_logits",
          {.B = 1, .H = 1, .Nq = 16, .Nk = 40, .hd = 16, .hv = 16, .scale = 4.0f, .fill = {-2, 2}, .kv = bf});
  add_att(L, "finite", {.B = 1, .H = 2, .Nq = 15, .Nk = 17, .hd = 16, .hv = 16, .fill = kFinite, .kv = bf});
  add_att(L, "decode", {.B = 1, .H = 4, .Nq = 1, .Nk = 2047, .hd = 64, .hv = 64, .causal = true, .kv = bf});
  add_att(L, "model",
          {.B = 1, .H = 1, .Nq = 257, .Nk = 257, .hd = 64, .hv = 64, .causal = true, .padding = 1, .kv = bf});
}

void generate_sparse_attention(CaseList& L) {
  Rng& r = L.rng();
  // indices batch/head extents: full, broadcast over batch, over heads, over both.
  const std::pair<bool, bool> bcast[] = {{false, false}, {true, false}, {false, true}, {true, true}};
  int i = 0;
  DType kv = DType::f32;  // K and V dtype of the cases added
  auto add = [&](const std::string& tag, int64_t B, int64_t H, int64_t Nq, int64_t Nk, int64_t kk, int64_t hd,
                 double unused) {
    const auto [bb, bh] = bcast[size_t(i++) % 4];
    HostTensor ix = random_int(r, DType::i32, {bb ? 1 : B, bh ? 1 : H, Nq, kk}, 0, Nk - 1);
    for (int64_t e = 0; e < ix.desc.numel(); ++e)
      if (r.chance(unused)) set(ix, e, -1);
    // Query 0 of the first index row: no valid index (zeros); query 1 repeats one key.
    for (int64_t s = 0; s < kk; ++s) set(ix, s, -1);
    if (Nq > 1)
      for (int64_t s = 0; s < kk; ++s) set(ix, kk + s, s % 2 ? Nk - 1 : 0);
    const float scale = float(1.0 / std::sqrt(double(hd)));
    DiffCase& c = L.add((kv == DType::bf16 ? "bf16kv_" : "") + tag + "_b" + std::to_string(B) + "h" +
                            std::to_string(H) + "_q" + std::to_string(Nq) + "k" + std::to_string(Nk) + "_kk" +
                            std::to_string(kk) + "_hd" + std::to_string(hd) + "_ix" + std::to_string(bb) +
                            std::to_string(bh),
                        SparseAttentionAttrs{.scale = scale},
                        {random(r, DType::f32, {B, H, Nq, hd}), random(r, kv, {B, H, Nk, hd}),
                         random(r, kv, {B, H, Nk, hd + i % 3}), ix});
    if (kv == DType::bf16) c.may_refuse = "bf16";
  };
  const int64_t kks[] = {1, 7, 8, 16, 17, 33};
  const int64_t hds[] = {1, 8, 16, 17, 64};
  for (int64_t kk : kks)
    for (int64_t hd : hds) add("kk", 2, 2, 9, 40, kk, hd, 0.2);
  add("dense", 1, 1, 33, 33, 33, 16, 0.0);
  add("model", 1, 4, 257, 257, 32, 64, 0.1);
  // Out-of-range indices: Nk and -2.
  auto bad = [&](const std::string& tag, int32_t value) {
    HostTensor ix = random_int(r, DType::i32, {1, 1, 5, 4}, -1, 9);
    set(ix, 13, value);
    L.add(tag, SparseAttentionAttrs{.scale = 0.5f},
          {random(r, DType::f32, {1, 1, 5, 8}), random(r, DType::f32, {1, 1, 10, 8}),
           random(r, DType::f32, {1, 1, 10, 8}), ix})
        .expect_error = true;
  };
  bad("error_index_high", 10);
  bad("error_index_negative", -2);

  // bf16 K and V (gathered rows of half the bytes): kk and hd across the vector widths (odd
  // hd: partial widening loads; hd > 8 vectors: the generic dot product), a single slot,
  // every slot used, and a model-shaped case.
  kv = DType::bf16;
  for (int64_t kk : {int64_t(1), int64_t(8), int64_t(17)})
    for (int64_t hd :
         {int64_t(1), int64_t(7), int64_t(16), int64_t(17), int64_t(64), int64_t(65), int64_t(130)})
      add("kk", 2, 2, 9, 40, kk, hd, 0.2);
  add("dense", 1, 1, 33, 33, 33, 16, 0.0);
  add("model", 1, 4, 257, 257, 32, 64, 0.1);
  auto bad16 = [&](const std::string& tag, int32_t value) {
    HostTensor ix = random_int(r, DType::i32, {1, 1, 5, 4}, -1, 9);
    set(ix, 13, value);
    DiffCase& c = L.add(tag, SparseAttentionAttrs{.scale = 0.5f},
                        {random(r, DType::f32, {1, 1, 5, 8}), random(r, DType::bf16, {1, 1, 10, 8}),
                         random(r, DType::bf16, {1, 1, 10, 8}), ix});
    c.expect_error = true;
    c.may_refuse = "bf16";
  };
  bad16("bf16kv_error_index_high", 10);
}

void generate_axial_attention(CaseList& L) {
  // segment 1 (one direct key: the query itself; every position a column slot) and
  // segment = N (n = 1: causal has no column slot, bidirectional sees its own position twice).
  add_axial(L, "s1", {.segment = 1, .n = 1});
  add_axial(L, "s1", {.segment = 1, .n = 1, .causal = true});
  add_axial(L, "s1", {.B = 2, .H = 2, .segment = 1, .n = 9, .hd = 7, .hv = 7, .causal = true});
  add_axial(L, "s1", {.B = 1, .H = 2, .segment = 1, .n = 65, .hd = 16, .hv = 16});
  add_axial(L, "whole", {.B = 2, .H = 1, .segment = 17, .n = 1, .hd = 16, .hv = 16});
  add_axial(L, "whole", {.B = 1, .H = 2, .segment = 64, .n = 1, .hd = 8, .hv = 8, .causal = true});
  add_axial(L, "whole", {.B = 1, .H = 1, .segment = 129, .n = 1, .hd = 17, .hv = 17});
  // Segments around the 64-query/64-key blocks, and n around and past them (N = 260).
  add_axial(L, "block", {.B = 1, .H = 2, .segment = 63, .n = 3, .hd = 16, .hv = 16});
  add_axial(L, "block", {.B = 1, .H = 1, .segment = 64, .n = 2, .hd = 16, .hv = 16, .causal = true});
  add_axial(L, "block", {.B = 1, .H = 1, .segment = 64, .n = 3, .hd = 32, .hv = 32});
  add_axial(L, "block", {.B = 1, .H = 1, .segment = 65, .n = 2, .hd = 8, .hv = 8, .causal = true});
  add_axial(L, "block", {.B = 1, .H = 1, .segment = 65, .n = 3, .hd = 7, .hv = 7});
  add_axial(L, "block", {.B = 1, .H = 1, .segment = 128, .n = 2, .hd = 16, .hv = 16});
  add_axial(L, "block", {.B = 1, .H = 1, .segment = 128, .n = 2, .hd = 16, .hv = 16, .causal = true});
  add_axial(L, "rows", {.B = 1, .H = 1, .segment = 3, .n = 63, .hd = 16, .hv = 16});
  add_axial(L, "rows", {.B = 1, .H = 1, .segment = 3, .n = 64, .hd = 16, .hv = 16, .causal = true});
  add_axial(L, "rows", {.B = 1, .H = 1, .segment = 2, .n = 65, .hd = 16, .hv = 16});
  add_axial(L, "rows", {.B = 1, .H = 2, .segment = 2, .n = 130, .hd = 16, .hv = 16});
  add_axial(L, "rows", {.B = 1, .H = 2, .segment = 2, .n = 130, .hd = 16, .hv = 16, .causal = true});
  // Head dims across the vector widths, hv != hd.
  const int64_t hds[] = {1, 7, 16, 17, 64, 65};
  int i = 0;
  for (int64_t hd : hds) {
    add_axial(L, "hd", {.B = 2, .H = 1, .segment = 5, .n = 4, .hd = hd, .hv = hd, .causal = i % 2 == 1});
    ++i;
  }
  add_axial(L, "hv", {.B = 1, .H = 2, .segment = 8, .n = 4, .hd = 16, .hv = 5});
  add_axial(L, "hv", {.B = 1, .H = 1, .segment = 7, .n = 5, .hd = 8, .hv = 33, .causal = true});
  add_axial(L, "hv", {.B = 1, .H = 1, .segment = 4, .n = 4, .hd = 65, .hv = 1});
  // Key padding: tail padding (whole padded rows and columns), a fully padded batch (zeros),
  // bidirectional and causal.
  add_axial(L, "pad", {.B = 3, .H = 2, .segment = 8, .n = 4, .hd = 16, .hv = 16, .padding = 1});
  add_axial(L, "pad", {.B = 2, .H = 2, .segment = 16, .n = 5, .hd = 32, .hv = 32, .padding = 2});
  add_axial(L, "pad", {.B = 2, .H = 1, .segment = 7, .n = 5, .hd = 8, .hv = 8, .causal = true, .padding = 1});
  add_axial(L, "pad",
            {.B = 2, .H = 1, .segment = 64, .n = 3, .hd = 17, .hv = 17, .causal = true, .padding = 2});
  add_axial(L, "pad",
            {.B = 2, .H = 1, .segment = 1, .n = 33, .hd = 8, .hv = 8, .causal = true, .padding = 2});
  // Large logits (softmax range: scale 4, values +-2; also with has_direct_state below),
  // signed zeros/ties/subnormals.
  const Axial big_logits{
      .B = 1, .H = 1, .segment = 8, .n = 5, .hd = 16, .hv = 16, .scale = 4.0f, .fill = {-2, 2}};
  Axial big_logits_causal = big_logits;
  big_logits_causal.causal = true;
  add_axial(L, "big_logits", big_logits);
  add_axial(L, "big_logits", big_logits_causal);
  add_axial(L, "finite", {.B = 1, .H = 2, .segment = 4, .n = 6, .hd = 16, .hv = 16, .fill = kFinite});
  add_axial(L, "finite",
            {.B = 1, .H = 1, .segment = 5, .n = 3, .hd = 17, .hv = 17, .causal = true, .fill = kFinite});
  // Model-shaped (Combiner axial, D 128 / 2 heads): 256 tokens in segments of 32.
  add_axial(L, "model", {.B = 1, .H = 2, .segment = 32, .n = 8, .hd = 64, .hv = 64});
  add_axial(L, "model",
            {.B = 1, .H = 2, .segment = 32, .n = 8, .hd = 64, .hv = 64, .causal = true, .padding = 1});

  // has_direct_state: the direct keys' softmax given as (y0, lse0), about a fifth of lse0
  // -inf. Segment 1 and segment = N (n = 1: causal has no column slot, y = y0 or zeros).
  auto direct = [&](const std::string& tag, const Axial& a) {
    add_axial_direct(L, "direct_" + tag, {.a = a});
  };
  direct("s1", {.segment = 1, .n = 1});
  direct("s1", {.segment = 1, .n = 1, .causal = true});
  direct("s1", {.B = 2, .H = 2, .segment = 1, .n = 9, .hd = 7, .hv = 7, .causal = true});
  direct("s1", {.B = 1, .H = 2, .segment = 1, .n = 65, .hd = 16, .hv = 16});
  direct("s1", {.B = 1, .H = 1, .segment = 1, .n = 130, .hd = 8, .hv = 8, .causal = true});
  direct("whole", {.B = 2, .H = 1, .segment = 17, .n = 1, .hd = 16, .hv = 16});
  direct("whole", {.B = 1, .H = 2, .segment = 64, .n = 1, .hd = 8, .hv = 8, .causal = true});
  direct("whole", {.B = 1, .H = 1, .segment = 129, .n = 1, .hd = 17, .hv = 17});
  // Segments (column count) and row counts around the 64-query/64-key blocks.
  direct("block", {.B = 1, .H = 2, .segment = 63, .n = 3, .hd = 16, .hv = 16});
  direct("block", {.B = 1, .H = 1, .segment = 64, .n = 2, .hd = 16, .hv = 16, .causal = true});
  direct("block", {.B = 1, .H = 1, .segment = 65, .n = 3, .hd = 7, .hv = 7, .causal = true});
  direct("rows", {.B = 1, .H = 1, .segment = 3, .n = 63, .hd = 16, .hv = 16});
  direct("rows", {.B = 1, .H = 1, .segment = 3, .n = 64, .hd = 16, .hv = 16, .causal = true});
  direct("rows", {.B = 1, .H = 1, .segment = 2, .n = 65, .hd = 16, .hv = 16});
  direct("rows", {.B = 1, .H = 2, .segment = 2, .n = 65, .hd = 16, .hv = 16, .causal = true});
  direct("rows", {.B = 1, .H = 1, .segment = 2, .n = 130, .hd = 16, .hv = 16, .causal = true});
  // hd != hv, across the vector widths.
  const int64_t hvs[] = {1, 5, 16, 17, 33, 64, 65};
  i = 0;
  for (int64_t hv : hvs) {
    direct(
        "hv",
        {.B = 2, .H = 1, .segment = 5, .n = 4, .hd = hds[size_t(i + 3) % 6], .hv = hv, .causal = i % 2 == 0});
    ++i;
  }
  // Key padding (column slots only): tail padding, a fully padded batch (y = y0 or zeros).
  direct("pad", {.B = 3, .H = 2, .segment = 8, .n = 4, .hd = 16, .hv = 8, .padding = 1});
  direct("pad", {.B = 2, .H = 2, .segment = 16, .n = 5, .hd = 32, .hv = 32, .padding = 2});
  direct("pad", {.B = 2, .H = 1, .segment = 7, .n = 5, .hd = 8, .hv = 8, .causal = true, .padding = 1});
  direct("pad", {.B = 2, .H = 1, .segment = 64, .n = 3, .hd = 17, .hv = 5, .causal = true, .padding = 2});
  direct("pad", {.B = 2, .H = 1, .segment = 1, .n = 65, .hd = 8, .hv = 8, .causal = true, .padding = 2});
  // Large column logits (scale 4, values +-2) against lse0 in [-3, 6].
  direct("big_logits", big_logits);
  direct("big_logits", big_logits_causal);
  // lse0 everywhere -inf (the column softmax alone), far above the column logits (y ~ y0),
  // and spanning both.
  add_axial_direct(L, "direct_dead",
                   {.a = {.B = 1, .H = 2, .segment = 8, .n = 9, .hd = 16, .hv = 16}, .dead = 1.0});
  add_axial_direct(
      L, "direct_dead",
      {.a = {.B = 1, .H = 1, .segment = 8, .n = 9, .hd = 16, .hv = 16, .causal = true}, .dead = 1.0});
  add_axial_direct(
      L, "direct_high",
      {.a = {.B = 1, .H = 1, .segment = 8, .n = 9, .hd = 16, .hv = 16}, .lse_lo = 20, .lse_hi = 40});
  add_axial_direct(L, "direct_wide",
                   {.a = {.B = 1, .H = 1, .segment = 8, .n = 9, .hd = 16, .hv = 16, .causal = true},
                    .lse_lo = -30,
                    .lse_hi = 30});
  // NaN in y0 rows with lse0 = -inf and in padded column slots' ks / vs: never read.
  add_axial_direct(
      L, "direct_hidden_nan",
      {.a = {.B = 2, .H = 2, .segment = 8, .n = 9, .hd = 16, .hv = 16, .padding = 1}, .hidden_nan = true});
  add_axial_direct(
      L, "direct_hidden_nan",
      {.a = {.B = 2, .H = 1, .segment = 65, .n = 3, .hd = 17, .hv = 7, .causal = true, .padding = 2},
       .hidden_nan = true});
  // Model-shaped (Combiner axial, D 128 / 2 heads, 256 tokens in segments of 32).
  direct("model", {.B = 1, .H = 2, .segment = 32, .n = 8, .hd = 64, .hv = 64});
  direct("model", {.B = 1, .H = 2, .segment = 32, .n = 8, .hd = 64, .hv = 64, .causal = true, .padding = 1});
}

}  // namespace longrun::conformance::diff
