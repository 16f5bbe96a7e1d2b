#include "seq2seq/selection.h"

#include <cmath>
#include <limits>
#include <memory>

#include "common/blocks.h"
#include "seq2seq/layers.h"

namespace longrun::models {

int64_t selected_keys(const SelectionSpec& s, int64_t valid_keys) {
  const auto by_ratio = int64_t(std::ceil(s.ratio * double(valid_keys) - 1e-9));
  return std::min(valid_keys, std::max(by_ratio, s.min_keys));
}

void add_selection(std::vector<ParamSpec>* t, const std::string& attn, int64_t model_dim,
                   const SelectionSpec& s) {
  add_linear(t, attn + ".select_q", s.dim, model_dim, s.bias);
  add_linear(t, attn + ".select_k", s.dim, model_dim, s.bias);
}

ValueId selection_keys(GraphContext& c, ValueId xk, const std::string& attn, const SelectionSpec& s) {
  return linear(c, xk, attn + ".select_k", Activation::none, s.bias);
}

ValueId select_keys(GraphContext& c, ValueId xq, ValueId xk, const std::string& attn, const SelectionSpec& s,
                    bool causal, ValueId key_mask) {
  return select_with_keys(c, xq, selection_keys(c, xk, attn, s), attn, s, causal, key_mask);
}

ValueId select_with_keys(GraphContext& c, ValueId xq, ValueId ks, const std::string& attn,
                         const SelectionSpec& s, bool causal, ValueId key_mask) {
  if (!c.ok()) return kNoValue;
  const std::string p = attn + ".selection";
  const int64_t b = c.desc(xq).dim(0), nq = c.desc(xq).dim(1), nk = c.desc(ks).dim(1);
  const ValueId qs = linear(c, xq, attn + ".select_q", Activation::none, s.bias);
  ValueId scores = c.b.matmul({qs, ks}, {.trans_b = true, .alpha = float(1.0 / std::sqrt(double(s.dim)))},
                              p + ".scores");  // [B, Nq, Nk]
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (key_mask != kNoValue) {
    auto neg = std::make_shared<std::vector<float>>(1, kNegInf);
    const ValueId fill = constant(c, p + ".neg_inf", TensorDesc(DType::f32, {1}), neg);
    scores = c.b.where({reshape(c, key_mask, {b, 1, nk}), scores, fill}, {}, p + ".key_mask");
  }
  // reach[j][i] = 1 when query i may see key j (causal: j <= i + Nk - Nq).
  auto reach = std::make_shared<std::vector<float>>(size_t(nk * nq), 1.0f);
  if (causal) {
    auto bias = std::make_shared<std::vector<float>>(size_t(nq * nk), 0.0f);
    for (int64_t i = 0; i < nq; ++i)
      for (int64_t j = i + nk - nq + 1; j < nk; ++j) {
        (*bias)[size_t(i * nk + j)] = kNegInf;
        (*reach)[size_t(j * nq + i)] = 0.0f;
      }
    scores = c.b.add({scores, constant(c, p + ".causal", TensorDesc(DType::f32, {nq, nk}), bias)}, {},
                     p + ".causal_mask");
  }
  const int64_t kk = selected_keys(s, nk);
  const ValueId idx = c.b.topk_indices({scores}, {.k = kk, .axis = -1}, p + ".topk");  // i32 [B, Nq, kk]
  // n_i = valid keys [B' , Nk] x reach [Nk, Nq]; keep[n][j] = (j < k(n)).
  ValueId valid = kNoValue;
  if (key_mask != kNoValue) {
    valid = c.b.cast({key_mask}, {.to = DType::f32}, p + ".valid_keys");
  } else {
    auto ones = std::make_shared<std::vector<float>>(size_t(nk), 1.0f);
    valid = constant(c, p + ".all_keys", TensorDesc(DType::f32, {1, nk}), ones);
  }
  const ValueId reach_c = constant(c, p + ".reach", TensorDesc(DType::f32, {nk, nq}), reach);
  const ValueId n_valid = c.b.matmul({valid, reach_c}, {}, p + ".row_keys");  // [B', Nq], exact counts
  auto keep = std::make_shared<std::vector<float>>(size_t((nk + 1) * kk), 0.0f);
  for (int64_t n = 0; n <= nk; ++n)
    for (int64_t j = 0; j < selected_keys(s, n); ++j) (*keep)[size_t(n * kk + j)] = 1.0f;
  const ValueId keep_table = constant(c, p + ".keep_table", TensorDesc(DType::f32, {nk + 1, kk}), keep);
  const ValueId keep_rows = c.b.embedding(
      {keep_table, c.b.cast({n_valid}, {.to = DType::i64}, p + ".row_keys_i64")}, {}, p + ".keep");
  // (idx + 1) * keep - 1: the index where kept, -1 elsewhere (exact in f32 below 2^24).
  const ValueId plus_one = c.b.scale({c.b.cast({idx}, {.to = DType::f32}, p + ".idx_f32")},
                                     {.scale = 1.0f, .shift = 1.0f}, p + ".idx_plus_one");
  const ValueId kept = c.b.scale({c.b.mul({plus_one, keep_rows}, {}, p + ".kept")},
                                 {.scale = 1.0f, .shift = -1.0f}, p + ".kept_minus_one");
  const ValueId sel = c.b.cast({kept}, {.to = DType::i32}, p);
  return reshape(c, sel, {b, 1, nq, kk});
}

}  // namespace longrun::models
