#include "lasformer/selection.h"

#include <cmath>
#include <limits>
#include <memory>

#include "common/blocks.h"
#include "seq2seq/layers.h"

namespace longrun::models {
namespace {

// first, first + 1, ..., first + n - 1 (exact in f32 below 2^24).
std::shared_ptr<const std::vector<float>> iota(int64_t n, int64_t first) {
  auto v = std::make_shared<std::vector<float>>(size_t(n));
  for (int64_t i = 0; i < n; ++i) (*v)[size_t(i)] = float(first + i);
  return v;
}

}  // namespace

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
  const MatmulAttrs score_attrs{.trans_b = true, .alpha = float(1.0 / std::sqrt(double(s.dim)))};
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  ValueId scores = kNoValue;  // [B, Nq, Nk]
  if (key_mask != kNoValue) {
    auto neg = std::make_shared<std::vector<float>>(1, kNegInf);
    const ValueId fill = constant(c, p + ".neg_inf", TensorDesc(DType::f32, {1}), neg);
    if (b == 1) {
      // One mask row: 0 / -inf as the GEMM's column bias, no extra pass over [Nq, Nk].
      auto zero = std::make_shared<std::vector<float>>(1, 0.0f);
      const ValueId bias = c.b.where(
          {reshape(c, key_mask, {nk}), constant(c, p + ".zero", TensorDesc(DType::f32, {1}), zero), fill}, {},
          p + ".key_bias");
      MatmulAttrs with_bias = score_attrs;
      with_bias.has_bias = true;
      scores = c.b.matmul({qs, ks, bias}, with_bias, p + ".scores");
    } else {
      scores = c.b.where(
          {reshape(c, key_mask, {b, 1, nk}), c.b.matmul({qs, ks}, score_attrs, p + ".scores"), fill}, {},
          p + ".key_mask");
    }
  } else {
    scores = c.b.matmul({qs, ks}, score_attrs, p + ".scores");
  }
  // Every constant below is O(Nq + Nk + k): an [Nq, Nk] one would be 64 MiB per selection at
  // N = 4096 (and the GEMM would pack a second copy of it).
  const int64_t off = nk - nq;  // causal: query i sees keys j <= i + off
  if (causal) {
    // Key j is beyond query i's reach by d = j - i - off; relu(d) >= 1 there (0 for reachable
    // keys), so adding relu(d) * -2^100 sinks exactly those keys below every real score and
    // leaves the reachable ones bit for bit. Which sunk key tops a short row does not matter:
    // the keep step below drops every index past the row's own count.
    const ValueId cols = constant(c, p + ".key_position", TensorDesc(DType::f32, {1, nk}), iota(nk, 0));
    const ValueId rows = constant(c, p + ".query_reach", TensorDesc(DType::f32, {nq, 1}), iota(nq, off));
    const ValueId beyond = c.b.relu({c.b.sub({cols, rows}, {}, p + ".distance")}, {}, p + ".beyond");
    scores = c.b.add({scores, c.b.scale({beyond}, {.scale = -0x1p100f}, p + ".causal_bias")}, {},
                     p + ".causal_mask");
  }
  const int64_t kk = selected_keys(s, nk);
  const ValueId idx = c.b.topk_indices({scores}, {.k = kk, .axis = -1}, p + ".topk");  // i32 [B, Nq, kk]
  // n_i = the valid keys query i may see: the running count of valid keys at its last
  // reachable key (causal) or the total ([B', 1], broadcast below), exact in f32 below 2^24.
  ValueId valid = kNoValue;
  if (key_mask != kNoValue) {
    valid = c.b.cast({key_mask}, {.to = DType::f32}, p + ".valid_keys");
  } else {
    auto ones = std::make_shared<std::vector<float>>(size_t(nk), 1.0f);
    valid = constant(c, p + ".all_keys", TensorDesc(DType::f32, {1, nk}), ones);
  }
  const ValueId running = c.b.cumsum({valid}, {.axis = -1}, p + ".valid_running");  // [B', Nk]
  const ValueId n_valid = causal ? slice(c, running, 1, off, nk) : slice(c, running, 1, nk - 1, nk);
  // keep[i][j] = (j < k(n_i)) = relu(k(n_i) - j) - relu(k(n_i) - j - 1) for integers, with
  // k(n) from an [Nk + 1, 1] table.
  auto kept_of = std::make_shared<std::vector<float>>(size_t(nk + 1));
  for (int64_t n = 0; n <= nk; ++n) (*kept_of)[size_t(n)] = float(selected_keys(s, n));
  const ValueId k_table = constant(c, p + ".keys_for_count", TensorDesc(DType::f32, {nk + 1, 1}), kept_of);
  const ValueId k_rows =
      c.b.embedding({k_table, c.b.cast({n_valid}, {.to = DType::i64}, p + ".row_keys_i64")}, {},
                    p + ".row_k");  // [B', n, 1]
  const ValueId slot = constant(c, p + ".slot", TensorDesc(DType::f32, {kk}), iota(kk, 0));
  const ValueId room = c.b.sub({k_rows, slot}, {}, p + ".room");  // k(n_i) - j
  const ValueId keep_rows =
      c.b.sub({c.b.relu({room}, {}, p + ".room_pos"),
               c.b.relu({c.b.scale({room}, {.scale = 1.0f, .shift = -1.0f}, p + ".room_minus_one")}, {},
                        p + ".room_pos_minus_one")},
              {}, p + ".keep");
  // (idx + 1) * keep - 1: the index where kept, -1 elsewhere (exact in f32 below 2^24).
  const ValueId plus_one = c.b.scale({c.b.cast({idx}, {.to = DType::f32}, p + ".idx_f32")},
                                     {.scale = 1.0f, .shift = 1.0f}, p + ".idx_plus_one");
  const ValueId kept = c.b.scale({c.b.mul({plus_one, keep_rows}, {}, p + ".kept")},
                                 {.scale = 1.0f, .shift = -1.0f}, p + ".kept_minus_one");
  const ValueId sel = c.b.cast({kept}, {.to = DType::i32}, p);
  return reshape(c, sel, {b, 1, nq, kk});
}

}  // namespace longrun::models
