#include "seq2seq/layers.h"

#include <cmath>

#include "common/blocks.h"

namespace longrun::models {

namespace {

void add_attention(std::vector<ParamSpec>* t, const std::string& attn, int64_t d) {
  for (const char* w : {"q_proj", "k_proj", "v_proj", "out_proj"}) add_linear(t, attn + "." + w, d, d);
}

}  // namespace

void add_encoder_layer(std::vector<ParamSpec>* t, const std::string& p, const LayerShape& s) {
  add_attention(t, p + "self_attn", s.dim);
  add_layer_norm(t, p + "self_attn_layer_norm", s.dim);
  add_linear(t, p + "fc1", s.ffn, s.dim);
  add_linear(t, p + "fc2", s.dim, s.ffn);
  add_layer_norm(t, p + "final_layer_norm", s.dim);
}

void add_decoder_layer(std::vector<ParamSpec>* t, const std::string& p, const LayerShape& s) {
  add_attention(t, p + "self_attn", s.dim);
  add_layer_norm(t, p + "self_attn_layer_norm", s.dim);
  add_attention(t, p + "encoder_attn", s.dim);
  add_layer_norm(t, p + "encoder_attn_layer_norm", s.dim);
  add_linear(t, p + "fc1", s.ffn, s.dim);
  add_linear(t, p + "fc2", s.dim, s.ffn);
  add_layer_norm(t, p + "final_layer_norm", s.dim);
}

ValueId residual_block(GraphContext& c, ValueId x, const std::string& ln_prefix, bool normalize_before,
                       const std::function<ValueId(ValueId)>& f,
                       const std::function<ValueId(ValueId)>& post_sum) {
  if (normalize_before) {
    const ValueId h = f(layer_norm(c, x, ln_prefix, kSeq2SeqLayerNormEps));
    return c.b.add({x, h}, {}, ln_prefix + ".residual");
  }
  ValueId sum = c.b.add({x, f(x)}, {}, ln_prefix + ".residual");
  if (post_sum) sum = post_sum(sum);
  return layer_norm(c, sum, ln_prefix, kSeq2SeqLayerNormEps);
}

ValueId project_heads(GraphContext& c, ValueId x, const std::string& attn, const char* which,
                      const LayerShape& s) {
  return split_heads(c, linear(c, x, attn + "." + which + "_proj"), s.heads, s.head_dim());
}

ValueId attend_and_project(GraphContext& c, ValueId q, ValueId k, ValueId v, const std::string& attn,
                           const LayerShape& s, bool causal, ValueId key_mask, ValueId selected) {
  if (!c.ok()) return kNoValue;
  if (selected != kNoValue) {
    const SparseAttentionAttrs a{.scale = float(1.0 / std::sqrt(double(s.head_dim())))};
    const ValueId y = c.b.sparse_attention({q, k, v, selected}, a, attn + ".sparse_attention");
    return linear(c, merge_heads(c, y), attn + ".out_proj");
  }
  // fairseq scales q (bias included) by hd^-0.5 before q k^T; the same product here.
  const AttentionAttrs a{.scale = float(1.0 / std::sqrt(double(s.head_dim()))),
                         .causal = causal,
                         .has_key_padding_mask = key_mask != kNoValue};
  std::vector<ValueId> in = {q, k, v};
  if (key_mask != kNoValue) in.push_back(key_mask);
  const ValueId y = c.b.attention(in, a, attn + ".attention");
  return linear(c, merge_heads(c, y), attn + ".out_proj");
}

std::pair<ValueId, ValueId> cross_attention_kv(GraphContext& c, ValueId memory, const std::string& p,
                                               const LayerShape& s) {
  const std::string attn = p + "encoder_attn";
  return {project_heads(c, memory, attn, "k", s), project_heads(c, memory, attn, "v", s)};
}

ValueId encoder_layer(GraphContext& c, ValueId x, const std::string& p, const LayerShape& s, ValueId key_mask,
                      const std::function<ValueId(ValueId)>& before_final_norm, const KeySelector& select) {
  const std::string attn = p + "self_attn";
  x = residual_block(c, x, p + "self_attn_layer_norm", s.normalize_before, [&](ValueId h) {
    const ValueId selected = select ? select(attn, h, h, false, key_mask) : kNoValue;
    return attend_and_project(c, project_heads(c, h, attn, "q", s), project_heads(c, h, attn, "k", s),
                              project_heads(c, h, attn, "v", s), attn, s, false, key_mask, selected);
  });
  return residual_block(
      c, x, p + "final_layer_norm", s.normalize_before,
      [&](ValueId h) { return feed_forward(c, h, p + "fc1", p + "fc2", s.activation); }, before_final_norm);
}

ValueId decoder_layer(GraphContext& c, ValueId x, const std::string& p, const LayerShape& s,
                      DecoderSelfAttention& self, const DecoderCrossAttention& cross,
                      const KeySelector& select) {
  const std::string attn = p + "self_attn";
  const bool step = self.past_k != kNoValue;
  x = residual_block(c, x, p + "self_attn_layer_norm", s.normalize_before, [&](ValueId h) {
    const ValueId q = project_heads(c, h, attn, "q", s);
    ValueId k = project_heads(c, h, attn, "k", s);
    ValueId v = project_heads(c, h, attn, "v", s);
    if (!step) {
      const ValueId selected = select ? select(attn, h, h, true, self.padding_mask) : kNoValue;
      return attend_and_project(c, q, k, v, attn, s, true, self.padding_mask, selected);
    }
    // The cache's dtype is the past inputs' (bf16 in a bf16 session, generate.h): the step's
    // key and value are rounded to it before they are written.
    const DType cache = c.desc(self.past_k).dtype();
    if (cache != DType::f32) {
      k = c.b.cast({k}, {.to = cache}, attn + ".k_to_cache");
      v = c.b.cast({v}, {.to = cache}, attn + ".v_to_cache");
    }
    // where() broadcasts the step's [B, H, 1, hd] over the S slots and keeps the past elsewhere.
    self.present_k = c.b.where({self.write_slot, k, self.past_k}, {}, attn + ".cache_k");
    self.present_v = c.b.where({self.write_slot, v, self.past_v}, {}, attn + ".cache_v");
    const ValueId selected = select ? select(attn, h, h, false, self.slot_mask) : kNoValue;
    return attend_and_project(c, q, self.present_k, self.present_v, attn, s, false, self.slot_mask, selected);
  });
  const std::string xattn = p + "encoder_attn";
  x = residual_block(c, x, p + "encoder_attn_layer_norm", s.normalize_before, [&](ValueId h) {
    const ValueId selected = select ? select(xattn, h, cross.memory, false, cross.key_mask) : kNoValue;
    return attend_and_project(c, project_heads(c, h, xattn, "q", s), cross.k, cross.v, xattn, s, false,
                              cross.key_mask, selected);
  });
  return residual_block(c, x, p + "final_layer_norm", s.normalize_before,
                        [&](ValueId h) { return feed_forward(c, h, p + "fc1", p + "fc2", s.activation); });
}

ValueId constant(GraphContext& c, const std::string& name, const TensorDesc& desc,
                 std::shared_ptr<const std::vector<float>> values) {
  if (!c.ok()) return kNoValue;
  const void* data = values->data();
  return c.b.weight(name, desc, data, std::move(values));
}

std::pair<ValueId, ValueId> make_positions(GraphContext& c, ValueId ids, int64_t pad, int64_t vocab,
                                           const std::string& name) {
  if (!c.ok()) return {kNoValue, kNoValue};
  const int64_t b = c.desc(ids).dim(0), n = c.desc(ids).dim(1);
  auto is_token = std::make_shared<std::vector<float>>(size_t(vocab), 1.0f);
  if (pad >= 0 && pad < vocab) (*is_token)[size_t(pad)] = 0.0f;
  const ValueId table = constant(c, name + ".non_pad_table", TensorDesc(DType::f32, {vocab, 1}), is_token);
  const ValueId non_pad = reshape(c, c.b.embedding({table, ids}, {}, name + ".non_pad"), {b, n});
  // Non-pad tokens counted from the left: integers below 2^24, exact in f32.
  const ValueId count = c.b.cumsum({non_pad}, {.axis = 1}, name + ".cumsum");
  const ValueId counted = c.b.mul({count, non_pad}, {}, name + ".mask");
  const ValueId pos = c.b.scale({counted}, {.scale = 1.0f, .shift = float(pad)}, name + ".offset");
  return {c.b.cast({pos}, {.to = DType::i64}, name), non_pad};
}

}  // namespace longrun::models
