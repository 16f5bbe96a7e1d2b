#include "seq2seq/key_selection.h"

#include <cmath>
#include <memory>
#include <vector>

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
  const int64_t kk = selected_keys(s, nk);
  MatmulTopkAttrs attrs{.k = kk,
                        .alpha = float(1.0 / std::sqrt(double(s.dim))),
                        .causal = causal,
                        .has_key_mask = key_mask != kNoValue};
  std::vector<ValueId> inputs{qs, ks};
  if (key_mask != kNoValue) inputs.push_back(key_mask);
  // Without a mask or causality every row sees all Nk keys and keeps k(Nk) = kk: no row_k.
  if (causal || key_mask != kNoValue) {
    // n_i = the valid keys query i may see: the running count of valid keys at its last
    // reachable key (causal) or the total ([B', 1]), exact in f32 below 2^24; row_k = k(n_i)
    // from an [Nk + 1, 1] table. Every constant here is O(Nq + Nk).
    ValueId valid = kNoValue;
    if (key_mask != kNoValue) {
      valid = c.b.cast({key_mask}, {.to = DType::f32}, p + ".valid_keys");
    } else {
      auto ones = std::make_shared<std::vector<float>>(size_t(nk), 1.0f);
      valid = constant(c, p + ".all_keys", TensorDesc(DType::f32, {1, nk}), ones);
    }
    const ValueId running = c.b.cumsum({valid}, {.axis = -1}, p + ".valid_running");  // [B', Nk]
    const int64_t off = nk - nq;  // causal: query i sees keys j <= i + off
    const ValueId n_valid =
        causal ? slice(c, running, 1, off, nk) : slice(c, running, 1, nk - 1, nk);  // [B', Nq or 1]
    auto kept_of = std::make_shared<std::vector<float>>(size_t(nk + 1));
    for (int64_t n = 0; n <= nk; ++n) (*kept_of)[size_t(n)] = float(selected_keys(s, n));
    const ValueId k_table = constant(c, p + ".keys_for_count", TensorDesc(DType::f32, {nk + 1, 1}), kept_of);
    const ValueId k_rows =
        c.b.embedding({k_table, c.b.cast({n_valid}, {.to = DType::i64}, p + ".row_keys_i64")}, {},
                      p + ".row_k_f32");  // [B', Nq or 1, 1]
    const TensorDesc& kd = c.desc(k_rows);
    inputs.push_back(
        c.b.cast({reshape(c, k_rows, {kd.dim(0), kd.dim(1)})}, {.to = DType::i32}, p + ".row_k"));
    attrs.has_row_k = true;
  }
  const ValueId sel = c.b.matmul_topk(inputs, attrs, p);  // i32 [B, Nq, kk]
  return reshape(c, sel, {b, 1, nq, kk});
}

}  // namespace longrun::models
