// Differential cases of attention (head dims and sequence lengths around the vector widths
// and key blocks, causal with Nq <= Nk and Nq > Nk, key padding with fully padded batches,
// model shapes) and sparse_attention (unused slots, repeats, broadcast indices, rows with
// no valid index, out-of-range indices).
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "conformance/diff_case.h"

namespace longrun::conformance::diff {
namespace {

struct Att {
  int64_t B = 1, H = 1, Nq = 1, Nk = 1, hd = 1, hv = 1;
  bool causal = false;
  int padding = 0;  // 0: none; 1: tail padding per batch; 2: batch 0 fully padded, others random
  float scale = 0;  // 0: 1/sqrt(hd)
  Fill fill = kUniform;
};

void add_att(CaseList& L, const std::string& tag, const Att& a) {
  Rng& r = L.rng();
  const float scale = a.scale != 0 ? a.scale : float(1.0 / std::sqrt(double(a.hd)));
  AttentionAttrs attrs{.scale = scale, .causal = a.causal, .has_key_padding_mask = a.padding != 0};
  std::vector<HostTensor> in{random(r, DType::f32, {a.B, a.H, a.Nq, a.hd}, a.fill),
                             random(r, DType::f32, {a.B, a.H, a.Nk, a.hd}, a.fill),
                             random(r, DType::f32, {a.B, a.H, a.Nk, a.hv}, a.fill)};
  if (a.padding) {
    HostTensor m = zeros(DType::u8, {a.B, a.Nk});
    for (int64_t b = 0; b < a.B; ++b) {
      const int64_t valid = 1 + (b * 7 + a.Nk / 2) % a.Nk;  // tail padding: keys >= valid
      for (int64_t j = 0; j < a.Nk; ++j) {
        bool attend = j < valid;
        if (a.padding == 2) attend = b == 0 ? false : r.chance(0.6);
        set(m, b * a.Nk + j, attend ? 1 : 0);
      }
    }
    in.push_back(m);
  }
  std::string name = tag + "_b" + std::to_string(a.B) + "h" + std::to_string(a.H) + "_q" +
                     std::to_string(a.Nq) + "k" + std::to_string(a.Nk) + "_hd" + std::to_string(a.hd) + "hv" +
                     std::to_string(a.hv);
  if (a.causal) name += "_causal";
  if (a.padding) name += "_pad" + std::to_string(a.padding);
  L.add(name, attrs, std::move(in));
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
}

void generate_sparse_attention(CaseList& L) {
  Rng& r = L.rng();
  // indices batch/head extents: full, broadcast over batch, over heads, over both.
  const std::pair<bool, bool> bcast[] = {{false, false}, {true, false}, {false, true}, {true, true}};
  int i = 0;
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
    L.add(tag + "_b" + std::to_string(B) + "h" + std::to_string(H) + "_q" + std::to_string(Nq) + "k" +
              std::to_string(Nk) + "_kk" + std::to_string(kk) + "_hd" + std::to_string(hd) + "_ix" +
              std::to_string(bb) + std::to_string(bh),
          SparseAttentionAttrs{.scale = scale},
          {random(r, DType::f32, {B, H, Nq, hd}), random(r, DType::f32, {B, H, Nk, hd}),
           random(r, DType::f32, {B, H, Nk, hd + i % 3}), ix});
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
}

}  // namespace longrun::conformance::diff
