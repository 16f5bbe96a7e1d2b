// The BERT / RoBERTa encoder graph and its Fourier variants (bert.h has the semantics and the
// tensor-name table). One Architecture serves the four arches; BertConfig says which.
#include "bert/bert.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bert/bert_config.h"
#include "common/blocks.h"
#include "common/fourier_filter.h"

namespace longrun::models {
namespace {

std::string layer_prefix(int64_t i) { return "encoder.layer." + std::to_string(i) + "."; }

// HF create_position_ids_from_input_ids: real = (ids != pad); pos = cumsum(real) * real + pad,
// computed exactly in f32 (all values are integers < 2^24):
//   real = 1 - relu(1 - (id - pad)^2)   (0 for the pad id, 1 for any other integer id)
ValueId roberta_positions(GraphContext& c, ValueId ids, int64_t pad) {
  if (!c.ok()) return kNoValue;
  GraphBuilder& b = c.b;
  const std::string p = "embeddings.position_ids.";
  const ValueId f = b.cast({ids}, {.to = DType::f32}, p + "ids_f32");
  const ValueId d = b.scale({f}, {.scale = 1.0f, .shift = -float(pad)}, p + "minus_pad");
  const ValueId d2 = b.mul({d, d}, {}, p + "square");
  const ValueId is_pad =
      b.relu({b.scale({d2}, {.scale = -1.0f, .shift = 1.0f}, p + "one_minus")}, {}, p + "is_pad");
  const ValueId real = b.scale({is_pad}, {.scale = -1.0f, .shift = 1.0f}, p + "is_real");
  const ValueId count = b.cumsum({real}, {.axis = 1}, p + "cumsum");
  const ValueId pos = b.scale({b.mul({count, real}, {}, p + "times_real")},
                              {.scale = 1.0f, .shift = float(pad)}, p + "plus_pad");
  return b.cast({pos}, {.to = DType::i32}, p + "to_i32");
}

class BertEncoder final : public Architecture {
 public:
  explicit BertEncoder(BertConfig cfg) : cfg_(std::move(cfg)) {
    filter_.assign(size_t(cfg_.num_layers), false);
    for (int64_t i : cfg_.filter_layers) filter_[size_t(i)] = true;
  }

  std::vector<ParamSpec> parameters() const override {
    const int64_t d = cfg_.hidden_size, f = cfg_.intermediate_size;
    std::vector<ParamSpec> t;
    add_embedding(&t, "embeddings.word_embeddings", cfg_.vocab_size, d);
    add_embedding(&t, "embeddings.position_embeddings", cfg_.max_positions, d);
    add_embedding(&t, "embeddings.token_type_embeddings", cfg_.type_vocab_size, d);
    add_layer_norm(&t, "embeddings.LayerNorm", d);
    for (int64_t i = 0; i < cfg_.num_layers; ++i) {
      const std::string p = layer_prefix(i);
      add_linear(&t, p + "attention.self.query", d, d);
      add_linear(&t, p + "attention.self.key", d, d);
      add_linear(&t, p + "attention.self.value", d, d);
      add_linear(&t, p + "attention.output.dense", d, d);
      add_layer_norm(&t, p + "attention.output.LayerNorm", d);
      add_linear(&t, p + "intermediate.dense", f, d);
      add_linear(&t, p + "output.dense", d, f);
      add_layer_norm(&t, p + "output.LayerNorm", d);
    }
    if (cfg_.add_pooling_layer) add_linear(&t, "pooler.dense", d, d);
    if (cfg_.mlm_head) {
      add_linear(&t, head_dense(), d, d);
      add_layer_norm(&t, head_norm(), d);
      t.push_back({head_bias(), {cfg_.vocab_size}, false});
    }
    return t;
  }

  std::vector<ModelInput> inputs() const override {
    std::vector<ModelInput> in =
        token_model_inputs("[B, N] token ids, N <= " + std::to_string(cfg_.max_length()),
                           "[B, N] 1 = token, 0 = padding (default: all ones)");
    in.push_back({"token_type_ids",
                  false,
                  {DType::i32, DType::i64},
                  "[B, N] segment ids < " + std::to_string(cfg_.type_vocab_size) + " (default: zeros)"});
    return in;
  }

  std::vector<std::string> outputs() const override {
    std::vector<std::string> out = {"last_hidden_state"};
    if (cfg_.add_pooling_layer) out.push_back("pooled");
    if (cfg_.mlm_head) out.push_back("logits");
    return out;
  }

  std::vector<std::string> debug_outputs() const override { return filtered_layer_debug_outputs(filter_); }

  std::optional<InputLengthLimit> max_input_length() const override {
    if (!cfg_.roberta) return InputLengthLimit{cfg_.max_length(), "max_position_embeddings of the config"};
    return InputLengthLimit{cfg_.max_length(), "max_position_embeddings " +
                                                   std::to_string(cfg_.max_positions) + " - pad_token_id " +
                                                   std::to_string(cfg_.pad_token_id) + " - 1 of the config"};
  }

  std::string config_json() const override {
    nlohmann::json j = {
        {"vocab_size", cfg_.vocab_size},
        {"hidden_size", cfg_.hidden_size},
        {"num_hidden_layers", cfg_.num_layers},
        {"num_attention_heads", cfg_.num_heads},
        {"intermediate_size", cfg_.intermediate_size},
        {"hidden_act", cfg_.hidden_act},
        {"max_position_embeddings", cfg_.max_positions},
        {"type_vocab_size", cfg_.type_vocab_size},
        {"layer_norm_eps", cfg_.layer_norm_eps},
        {"pad_token_id", cfg_.pad_token_id},
        {"position_embedding_type", "absolute"},
        {"add_pooling_layer", cfg_.add_pooling_layer},
        {"mlm_head", cfg_.mlm_head},
    };
    if (cfg_.fourier) {
      j["filter_layers"] = cfg_.filter_layers;
      if (!cfg_.filter_layers.empty()) j["filter_ratio"] = cfg_.filter_ratio;
    }
    return j.dump();
  }

  void build(GraphContext& c) const override;

 private:
  std::string head_dense() const {
    return cfg_.roberta ? "lm_head.dense" : "cls.predictions.transform.dense";
  }
  std::string head_norm() const {
    return cfg_.roberta ? "lm_head.layer_norm" : "cls.predictions.transform.LayerNorm";
  }
  std::string head_bias() const { return cfg_.roberta ? "lm_head.bias" : "cls.predictions.bias"; }
  float eps() const { return float(cfg_.layer_norm_eps); }

  ValueId embeddings(GraphContext& c, const TokenInputs& in) const;
  ValueId layer(GraphContext& c, ValueId x, int64_t i, ValueId mask) const;
  ValueId mlm_logits(GraphContext& c, ValueId x) const;

  BertConfig cfg_;
  std::vector<bool> filter_;
};

ValueId BertEncoder::embeddings(GraphContext& c, const TokenInputs& in) const {
  GraphBuilder& b = c.b;
  const ValueId types = c.input("token_type_ids");
  if (types != kNoValue) {
    const TensorDesc& d = c.desc(types);
    if ((d.dtype() != DType::i32 && d.dtype() != DType::i64) || d.rank() != 2 || d.dim(0) != in.batch ||
        d.dim(1) != in.length) {
      c.fail(invalid_argument("input 'token_type_ids': expected i32 or i64 [" + std::to_string(in.batch) +
                              ", " + std::to_string(in.length) + "] (as input_ids), found " + d.to_string()));
      return kNoValue;
    }
  }
  ValueId x = embedding(c, in.ids, "embeddings.word_embeddings");
  if (cfg_.roberta) {
    const ValueId pos = roberta_positions(c, in.ids, cfg_.pad_token_id);
    x = b.add({x, embedding(c, pos, "embeddings.position_embeddings")}, {},
              "embeddings.position_embeddings.add");
  } else {
    x = add_learned_positions(c, x, "embeddings.position_embeddings", 0);
  }
  if (types != kNoValue) {
    x = b.add({x, embedding(c, types, "embeddings.token_type_embeddings")}, {},
              "embeddings.token_type_embeddings.add");
  } else {
    // HF's default token_type_ids are zeros: every position adds row 0.
    ValueId row0 = slice(c, c.weight("embeddings.token_type_embeddings.weight"), 0, 0, 1);
    if (c.ok() && c.desc(row0).dtype() != DType::f32)
      row0 = b.cast({row0}, {.to = DType::f32}, "embeddings.token_type_embeddings.to_f32");
    x = b.add({x, row0}, {}, "embeddings.token_type_embeddings.add");
  }
  return layer_norm(c, x, "embeddings.LayerNorm", eps());
}

// HF BertLayer (post-LN): X = LN(X + attn(X)); X = LN(X + FFN(X)).
ValueId BertEncoder::layer(GraphContext& c, ValueId x, int64_t i, ValueId mask) const {
  GraphBuilder& b = c.b;
  const std::string p = layer_prefix(i);
  const int64_t hd = cfg_.hidden_size / cfg_.num_heads;
  const AttentionSpec spec{p + "attention.self.query",
                           p + "attention.self.key",
                           p + "attention.self.value",
                           p + "attention.output.dense",
                           cfg_.num_heads,
                           hd,
                           float(1.0 / std::sqrt(double(hd))),
                           false,
                           p + "attention.self"};
  const ValueId a = multi_head_attention(c, x, x, spec, mask);
  x = layer_norm(c, b.add({x, a}, {}, p + "attention.output.residual"), p + "attention.output.LayerNorm",
                 eps());
  const ValueId h = feed_forward(c, x, p + "intermediate.dense", p + "output.dense", cfg_.act);
  return layer_norm(c, b.add({x, h}, {}, p + "output.residual"), p + "output.LayerNorm", eps());
}

// BertOnlyMLMHead / RobertaLMHead: dense -> act -> LN -> decoder tied to the word embeddings
// (+ the head's own bias). RoBERTa's head always uses erf GELU.
ValueId BertEncoder::mlm_logits(GraphContext& c, ValueId x) const {
  const Activation act = cfg_.roberta ? Activation::gelu : cfg_.act;
  const ValueId t = layer_norm(c, linear(c, x, head_dense(), act), head_norm(), eps());
  const ValueId table = c.weight("embeddings.word_embeddings.weight");
  const ValueId bias = c.weight(head_bias());
  if (!c.ok()) return kNoValue;
  return c.b.matmul({t, table, bias}, {.trans_b = true, .has_bias = true},
                    cfg_.roberta ? "lm_head.decoder" : "cls.predictions.decoder");
}

void BertEncoder::build(GraphContext& c) const {
  GraphBuilder& b = c.b;
  const InputLengthLimit limit = *max_input_length();
  const TokenInputs in = token_inputs(c, limit.tokens, limit.source);
  if (!c.ok()) return;
  const bool has_filter = !cfg_.filter_layers.empty();
  if (has_filter && in.length < 2) {
    c.fail(
        invalid_argument("input 'input_ids': a filter layer needs N >= 2 (the CLS slot plus one token to "
                         "filter), found N = 1"));
    return;
  }
  const ValueId mask = in.mask != kNoValue ? mask_to_u8(c, in.mask) : kNoValue;
  // A graph value is output once: the debug copy of the value that becomes
  // last_hidden_state goes through a (free) same-shape reshape view.
  auto debug_last = [&](ValueId v, const std::string& name, bool is_last) {
    if (!c.ok()) return;
    const TensorDesc& d = c.desc(v);
    c.debug(is_last ? reshape(c, v, {d.dim(0), d.dim(1), d.dim(2)}) : v, name);
  };
  ValueId x = embeddings(c, in);
  debug_last(x, "debug.embeddings", cfg_.num_layers == 0);

  const int64_t first_filter =
      has_filter ? *std::min_element(cfg_.filter_layers.begin(), cfg_.filter_layers.end()) : cfg_.num_layers;
  int64_t len = in.length;  // current length, CLS included
  for (int64_t i = 0; i < cfg_.num_layers; ++i) {
    const std::string tag = "debug.layer" + std::to_string(i);
    if (filter_[size_t(i)]) {
      // CLS stays out of the filter; M counts the CLS slot and caps at the len - 1 others.
      x = filter_after_cls(c, x, &len, cfg_.filter_ratio, layer_prefix(i) + "filter");
      c.debug(x, tag + ".filtered");
    }
    // docs/models.md#fourier-bart: no key padding mask from the first filter layer on.
    x = layer(c, x, i, i < first_filter ? mask : kNoValue);
    debug_last(x, tag + ".output", i + 1 == cfg_.num_layers);
  }
  c.output(x, "last_hidden_state");
  if (cfg_.add_pooling_layer)
    c.output(b.tanh({linear(c, first_token(c, x), "pooler.dense")}, {}, "pooler.activation"), "pooled");
  if (cfg_.mlm_head) c.output(mlm_logits(c, x), "logits");
}

}  // namespace

std::unique_ptr<Architecture> make_bert_architecture(BertConfig cfg) {
  return std::unique_ptr<Architecture>(new BertEncoder(std::move(cfg)));
}

}  // namespace longrun::models
