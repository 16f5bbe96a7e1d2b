// fastformer: the forward pass of docs/models.md#fastformer-forward, which follows the official notebook
// (Fastformer.ipynb: FastSelfAttention, FastformerLayer, FastformerEncoder, AttentionPooling,
// Model):
//
//   mask = attention_mask, or (ids != 0);  bias = (1 - mask) * -10000 (added to the scores;
//   0 for a row without tokens, see build())
//   X = LN(E_word[ids] + E_pos[0..N-1])                                       eps 1e-12
//   per layer (post-LN, BERT sublayers):
//     Q = X Wq^T + bq, K = X Wk^T + bk                                        [B, N, D]
//     alpha = softmax_n((Q Wqa^T + bqa)^T / sqrt(hd) + bias)                  [B, H, N]
//     q_h = sum_n alpha_hn Q_nh;  P = K * q;  beta = softmax_n((P Wka^T + bka)^T / sqrt(hd) + bias)
//     k_h = sum_n beta_hn P_nh;   A = (Q * k) Wt^T + bt + Q                   (value = query)
//     X1 = LN(A Wo^T + bo + X);   X = LN(gelu(X1 Wi^T + bi) Wo2^T + bo2 + X1)
//   pooled = sum_n a_n X_n / (sum_n a_n + 1e-8), a_n = exp(w2 . tanh(W1 X_n + b1) + b2) * mask_n
//   logits = pooled Wd^T + bd
#include "fastformer/fastformer.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/blocks.h"
#include "common/config.h"

namespace longrun::models {
namespace {

constexpr char kEncoder[] = "fastformer_model.";

struct FastformerConfig {
  int64_t vocab_size = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t layers = 0;
  int64_t intermediate = 0;
  int64_t max_positions = 0;
  int64_t num_labels = 0;
  double layer_norm_eps = 1e-12;
  bool share_layers = false;
};

class Fastformer final : public Architecture {
 public:
  explicit Fastformer(FastformerConfig cfg) : cfg_(cfg) {}

  std::vector<ParamSpec> parameters() const override {
    const int64_t d = cfg_.hidden, f = cfg_.intermediate, h = cfg_.heads;
    const std::string e = kEncoder;
    std::vector<ParamSpec> t;
    add_embedding(&t, "word_embedding", cfg_.vocab_size, d);
    add_embedding(&t, e + "position_embeddings", cfg_.max_positions, d);
    add_layer_norm(&t, e + "LayerNorm", d);
    for (int64_t i = 0; i < weight_sets(); ++i) {
      const std::string p = layer_prefix(i);
      add_linear(&t, p + "attention.self.query", d, d);
      add_linear(&t, p + "attention.self.query_att", h, d);
      add_linear(&t, p + "attention.self.key", d, d);
      add_linear(&t, p + "attention.self.key_att", h, d);
      add_linear(&t, p + "attention.self.transform", d, d);
      add_linear(&t, p + "attention.output.dense", d, d);
      add_layer_norm(&t, p + "attention.output.LayerNorm", d);
      add_linear(&t, p + "intermediate.dense", f, d);
      add_linear(&t, p + "output.dense", d, f);
      add_layer_norm(&t, p + "output.LayerNorm", d);
    }
    add_linear(&t, e + "poolers.0.att_fc1", d, d);
    add_linear(&t, e + "poolers.0.att_fc2", 1, d);
    add_linear(&t, "dense_linear", cfg_.num_labels, d);
    return t;
  }

  std::vector<ModelInput> inputs() const override {
    return token_model_inputs(
        "[B, N] token ids, N <= " + std::to_string(cfg_.max_positions) + "; 0 = padding",
        "[B, N] 1 = token, 0 = padding (default: input_ids != 0)");
  }

  std::vector<std::string> outputs() const override { return {"last_hidden_state", "pooled", "logits"}; }

  std::vector<std::string> debug_outputs() const override {
    std::vector<std::string> out = {"debug.embeddings"};
    for (int64_t i = 0; i < cfg_.layers; ++i) {
      out.push_back("debug.layer" + std::to_string(i) + ".attention");
      if (i + 1 < cfg_.layers) out.push_back("debug.layer" + std::to_string(i) + ".output");
    }
    return out;
  }

  std::optional<InputLengthLimit> max_input_length() const override {
    return InputLengthLimit{cfg_.max_positions, "max_position_embeddings of the config"};
  }

  std::string config_json() const override {
    const nlohmann::json j = {
        {"vocab_size", cfg_.vocab_size},
        {"hidden_size", cfg_.hidden},
        {"num_attention_heads", cfg_.heads},
        {"num_hidden_layers", cfg_.layers},
        {"intermediate_size", cfg_.intermediate},
        {"max_position_embeddings", cfg_.max_positions},
        {"num_labels", cfg_.num_labels},
        {"layer_norm_eps", cfg_.layer_norm_eps},
        {"hidden_act", "gelu"},
        {"pooler_type", "weightpooler"},
        {"share_layers", cfg_.share_layers},
    };
    return j.dump();
  }

  void build(GraphContext& c) const override;

 private:
  int64_t weight_sets() const { return cfg_.share_layers ? std::min<int64_t>(cfg_.layers, 1) : cfg_.layers; }
  // Layer i's weights: its own, or the one shared set "encoders.0".
  std::string layer_prefix(int64_t i) const {
    return std::string(kEncoder) + "encoders." + std::to_string(cfg_.share_layers ? 0 : i) + ".";
  }
  float eps() const { return float(cfg_.layer_norm_eps); }

  ValueId mask_f32(GraphContext& c, const TokenInputs& in) const;
  ValueId additive_pool(GraphContext& c, ValueId logits, ValueId bias, ValueId values, int64_t heads,
                        const std::string& name) const;
  ValueId fast_self_attention(GraphContext& c, ValueId x, ValueId bias, const std::string& p) const;
  ValueId pooler(GraphContext& c, ValueId x, ValueId mask) const;

  FastformerConfig cfg_;
};

// nn.Linear at `prefix` plus a residual, fused into the matmul: x W^T + b + residual.
ValueId linear_plus(GraphContext& c, ValueId x, const std::string& prefix, ValueId residual) {
  const ValueId w = c.weight(prefix + ".weight");
  const ValueId b = c.weight(prefix + ".bias");
  return c.b.matmul({x, w, b, residual}, {.trans_b = true, .has_bias = true, .has_c = true}, prefix);
}

// The mask as f32 [B, N] of 0/1: the given one, or (ids != 0) = 1 - relu(1 - ids) for the
// non-negative ids the embedding accepts (a negative id fails the embedding anyway).
ValueId Fastformer::mask_f32(GraphContext& c, const TokenInputs& in) const {
  GraphBuilder& b = c.b;
  if (in.mask != kNoValue)
    return b.cast({mask_to_u8(c, in.mask)}, {.to = DType::f32}, "attention_mask.to_f32");
  const ValueId ids = b.cast({in.ids}, {.to = DType::f32}, "attention_mask.from_ids");
  const ValueId clipped =
      b.relu({b.scale({ids}, {.scale = -1.0f, .shift = 1.0f})}, {}, "attention_mask.clip");
  return b.scale({clipped}, {.scale = -1.0f, .shift = 1.0f}, "attention_mask.nonzero");
}

// One of FastSelfAttention's two poolings: per head h, sum_n softmax_n(s_hn / sqrt(hd) +
// bias_n) values_nh. logits [B, N, H] (the query_att / key_att scores), bias [B, 1, N],
// values [B, N, D] -> [B, 1, D] (heads concatenated, as the official .view(-1, 1, H * hd)).
ValueId Fastformer::additive_pool(GraphContext& c, ValueId logits, ValueId bias, ValueId values,
                                  int64_t heads, const std::string& name) const {
  if (!c.ok()) return kNoValue;
  const int64_t batch = c.desc(values).dim(0), n = c.desc(values).dim(1), hd = cfg_.hidden / heads;
  const ValueId scores = transpose(c, logits, {0, 2, 1});  // [B, H, N]
  const ValueId weights =
      c.b.softmax({scores, bias}, {.axis = -1, .scale = float(1.0 / std::sqrt(double(hd))), .has_mask = true},
                  name + ".softmax");
  const ValueId pooled =
      c.b.matmul({reshape(c, weights, {batch, heads, 1, n}), split_heads(c, values, heads, hd)}, {},
                 name);  // [B, H, 1, hd]
  return reshape(c, pooled, {batch, 1, cfg_.hidden});
}

ValueId Fastformer::fast_self_attention(GraphContext& c, ValueId x, ValueId bias,
                                        const std::string& p) const {
  GraphBuilder& b = c.b;
  const ValueId q = linear(c, x, p + "query");
  const ValueId k = linear(c, x, p + "key");
  const ValueId pooled_q =
      additive_pool(c, linear(c, q, p + "query_att"), bias, q, cfg_.heads, p + "query_pool");
  const ValueId qk = b.mul({k, pooled_q}, {}, p + "key_times_query");
  const ValueId pooled_k =
      additive_pool(c, linear(c, qk, p + "key_att"), bias, qk, cfg_.heads, p + "key_pool");
  // "query = value": the values are the queries themselves.
  const ValueId u = b.mul({q, pooled_k}, {}, p + "value_times_key");
  return linear_plus(c, u, p + "transform", q);
}

// AttentionPooling: a_n = exp(w2 . tanh(W1 x_n + b1) + b2) * mask_n, pooled = sum a_n x_n /
// (sum a_n + 1e-8). Computed as one softmax over the N scores plus an extra logit ln(1e-8)
// whose value row is zero: softmax's max-shift cancels in the ratio, so this is the official
// formula exactly (the official exp can overflow; this cannot), and a row without any token
// pools to 0 as the official 0 / 1e-8. Masked scores get -1e30, whose exp is exactly 0.
ValueId Fastformer::pooler(GraphContext& c, ValueId x, ValueId mask) const {
  GraphBuilder& b = c.b;
  const std::string p = std::string(kEncoder) + "poolers.0.";
  if (!c.ok()) return kNoValue;
  const int64_t batch = c.desc(x).dim(0), n = c.desc(x).dim(1);
  const ValueId e = b.tanh({linear(c, x, p + "att_fc1")}, {}, p + "tanh");
  // [B, N, 1] -> [B, 1, N] is a view; the softmax then runs along the last axis.
  const ValueId scores = reshape(c, linear(c, e, p + "att_fc2"), {batch, 1, n});
  const ValueId drop =
      b.scale({reshape(c, mask, {batch, 1, n})}, {.scale = 1e30f, .shift = -1e30f}, p + "mask");
  const ValueId masked = b.add({scores, drop}, {}, p + "masked");
  const ValueId with_eps =
      b.pad({masked}, {.axis = 2, .after = 1, .value = float(std::log(1e-8))}, p + "eps");
  const ValueId weights = slice(c, b.softmax({with_eps}, {.axis = -1}, p + "softmax"), 2, 0, n);
  const ValueId pooled = b.matmul({weights, x}, {}, p + "sum");  // [B, 1, D]
  return reshape(c, pooled, {batch, cfg_.hidden});
}

void Fastformer::build(GraphContext& c) const {
  GraphBuilder& b = c.b;
  const InputLengthLimit limit = *max_input_length();
  const TokenInputs in = token_inputs(c, limit.tokens, limit.source);
  if (!c.ok()) return;
  const ValueId mask = mask_f32(c, in);
  // extended_attention_mask = (1 - mask) * -10000, added to both attention score sets. A row
  // without any token gets bias 0 instead: softmax is shift-invariant, so that is the
  // official value without the f32 rounding of s - 10000 (ulp 1e-3), which would otherwise
  // quantise that row's scores.
  const ValueId penalty =
      reshape(c, b.scale({mask}, {.scale = 10000.0f, .shift = -10000.0f}, "attention_mask.bias"),
              {in.batch, 1, in.length});
  const ValueId any_token = b.segment_max({reshape(c, mask, {in.batch, in.length, 1})},
                                          {.axis = -2, .segment = in.length}, "attention_mask.any");
  const ValueId bias = b.mul({penalty, any_token}, {}, "attention_mask.bias_rows");

  const std::string e = kEncoder;
  ValueId x = embedding(c, in.ids, "word_embedding");
  x = layer_norm(c, add_learned_positions(c, x, e + "position_embeddings", 0), e + "LayerNorm", eps());
  c.debug(x, "debug.embeddings");

  for (int64_t i = 0; i < cfg_.layers; ++i) {
    const std::string p = layer_prefix(i);
    const std::string tag = "debug.layer" + std::to_string(i);
    const ValueId a = fast_self_attention(c, x, bias, p + "attention.self.");
    c.debug(a, tag + ".attention");
    // BertSelfOutput, BertIntermediate, BertOutput: post-LN residual sublayers.
    const ValueId x1 = layer_norm(c, linear_plus(c, a, p + "attention.output.dense", x),
                                  p + "attention.output.LayerNorm", eps());
    const ValueId h = linear(c, x1, p + "intermediate.dense", Activation::gelu);
    x = layer_norm(c, linear_plus(c, h, p + "output.dense", x1), p + "output.LayerNorm", eps());
    if (i + 1 < cfg_.layers) c.debug(x, tag + ".output");  // the last one is last_hidden_state
  }

  c.output(x, "last_hidden_state");
  const ValueId pooled = pooler(c, x, mask);
  c.output(pooled, "pooled");
  c.output(linear(c, pooled, "dense_linear"), "logits");
}

}  // namespace

Result<std::unique_ptr<Architecture>> parse_fastformer_config(std::string_view config_json) {
  LR_ASSIGN_OR_RETURN(ConfigReader r, ConfigReader::parse(config_json, "fastformer config"));
  constexpr int64_t kMaxDim = int64_t(1) << 20;
  FastformerConfig c;
  LR_ASSIGN_OR_RETURN(c.vocab_size, r.integer("vocab_size", 1, int64_t(1) << 31));
  LR_ASSIGN_OR_RETURN(c.hidden, r.integer("hidden_size", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(c.heads, r.integer("num_attention_heads", 1, 4096));
  if (c.hidden % c.heads != 0)
    return r.error("num_attention_heads", "hidden_size " + std::to_string(c.hidden) +
                                              " must be a multiple of num_attention_heads, found " +
                                              std::to_string(c.heads));
  LR_ASSIGN_OR_RETURN(c.layers, r.integer("num_hidden_layers", 0, 1024));
  LR_ASSIGN_OR_RETURN(c.intermediate, r.integer("intermediate_size", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(c.max_positions, r.integer("max_position_embeddings", 1, int64_t(1) << 30));
  LR_ASSIGN_OR_RETURN(c.num_labels, r.integer("num_labels", 1, kMaxDim));
  // Below 1e-30 the f32 eps would be denormal or zero.
  LR_ASSIGN_OR_RETURN(c.layer_norm_eps, r.number_or("layer_norm_eps", 1e-12, 1e-30, 1.0));
  LR_ASSIGN_OR_RETURN(const std::string act, r.string_or("hidden_act", "gelu"));
  if (act != "gelu")
    return unsupported(
        "fastformer config: field 'hidden_act': only \"gelu\" (exact erf) is implemented, found \"" + act +
        "\"");
  LR_ASSIGN_OR_RETURN(const std::string pooler, r.string_or("pooler_type", "weightpooler"));
  if (pooler != "weightpooler")
    return unsupported(
        "fastformer config: field 'pooler_type': only \"weightpooler\" (the official AttentionPooling) is "
        "implemented, found \"" +
        pooler + "\"");
  LR_ASSIGN_OR_RETURN(c.share_layers, r.boolean_or("share_layers", false));
  for (const char* k :
       {"hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range", "type_vocab_size"})
    r.ignore(k);
  LR_RETURN_IF_ERROR(r.finish());
  return std::unique_ptr<Architecture>(new Fastformer(c));
}

}  // namespace longrun::models
