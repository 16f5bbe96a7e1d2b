// fourier-lra: the forward pass of docs/models.md#lra-encoder, which follows the official code
// (LRA/code/model.py, attention.py, attention_dct.py, model_wrapper.py):
//
//   ids, mask = append_cls(ids, mask)        CLS = V - 1 in front, last token dropped
//   X = E_tok[ids] + E_pos[0..T-1]
//   per layer i (pre-LN, eps 1e-5, erf GELU):
//     normal:  X = X + ff(MHA(LN1(X), mask if current length == T))
//     filter:  Z = LN1(X); S = [Z[:, :1], IDCT_M(DCT_{T'-1}(Z[:, 1:])[:M])], M = ceil(T' * r)
//              X = S + ff(MHA(S))        (no mask; T' = current length incl. CLS)
//     X = X + mlpblock(LN2(X))
//   X = LN(X), times the mask when the model has no filter layer
//   pooled = X[:, 0]; logits = Linear -> ReLU -> Linear
// dual (ModelForSCDual, docs/models.md#lra-dual-encoder): the same encoder over each input pair,
//   logits = Linear -> ReLU -> Linear of [p0, p1, p0 * p1, p0 - p1]
#include "fourier/fourier_lra.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/blocks.h"
#include "common/config.h"
#include "common/fourier_filter.h"

namespace longrun::models {
namespace {

constexpr float kLayerNormEps = 1e-5f;  // nn.LayerNorm default, as the official code

struct FourierLraConfig {
  int64_t vocab_size = 0;
  int64_t dim = 0;
  int64_t hidden = 0;
  int64_t num_head = 0;
  int64_t head_dim = 0;
  int64_t num_layers = 0;
  int64_t max_seq_len = 0;
  int64_t num_classes = 0;
  std::vector<int64_t> filter_layers;
  double filter_ratio = 0.0;  // 0 when there is no filter layer
  std::string pooling_mode = "CLS";
  bool dual = false;  // ModelForSCDual (the Retrieval task): two inputs, one shared encoder
};

// 2^ceil(log2 n): the official run_tasks.py sizes the position table so.
int64_t position_rows(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

std::string layer_prefix(int64_t i) { return "model.transformer_" + std::to_string(i) + "."; }

class FourierLra final : public Architecture {
 public:
  explicit FourierLra(FourierLraConfig cfg) : cfg_(std::move(cfg)) {
    filter_.assign(size_t(cfg_.num_layers), false);
    for (int64_t i : cfg_.filter_layers) filter_[size_t(i)] = true;
  }

  std::vector<ParamSpec> parameters() const override {
    const int64_t d = cfg_.dim, f = cfg_.hidden, hh = cfg_.num_head * cfg_.head_dim;
    std::vector<ParamSpec> t;
    add_embedding(&t, "model.embeddings.word_embeddings", cfg_.vocab_size, d);
    add_embedding(&t, "model.embeddings.position_embeddings", position_rows(cfg_.max_seq_len), d);
    for (int64_t i = 0; i < cfg_.num_layers; ++i) {
      const std::string p = layer_prefix(i);
      add_layer_norm(&t, p + "norm1", d);
      add_linear(&t, p + "mha.W_q", hh, d);
      add_linear(&t, p + "mha.W_k", hh, d);
      add_linear(&t, p + "mha.W_v", hh, d);
      add_linear(&t, p + "mha.ff", d, hh);
      add_layer_norm(&t, p + "norm2", d);
      add_linear(&t, p + "mlpblock.0", f, d);
      add_linear(&t, p + "mlpblock.3", d, f);
    }
    add_layer_norm(&t, "model.norm", d);
    // "classifer" (sic): the official name; SCHeadDual reads [p0, p1, p0 * p1, p0 - p1].
    add_linear(&t, "seq_classifer.mlpblock.0", f, cfg_.dual ? 4 * d : d);
    add_linear(&t, "seq_classifer.mlpblock.2", cfg_.num_classes, f);
    return t;
  }

  std::vector<ModelInput> inputs() const override {
    const std::string ids = "[B, N] token ids, N <= " + std::to_string(cfg_.max_seq_len);
    const std::string mask = "[B, N] 1 = token, 0 = padding (default: all ones)";
    if (!cfg_.dual) return token_model_inputs(ids, mask);
    std::vector<ModelInput> in;
    for (const char* k : {"_0", "_1"}) {
      std::vector<ModelInput> one = token_model_inputs(ids, mask);
      for (ModelInput& i : one) in.push_back({i.name + k, i.required, i.dtypes, i.description});
    }
    return in;
  }

  std::vector<std::string> outputs() const override {
    if (cfg_.dual) return {"last_hidden_state_0", "last_hidden_state_1", "logits"};
    return {"last_hidden_state", "pooled", "logits"};
  }

  std::vector<std::string> debug_outputs() const override {
    const std::vector<std::string> one = filtered_layer_debug_outputs(filter_);
    if (!cfg_.dual) return one;
    std::vector<std::string> out;
    for (const char* k : {"_0", "_1"})
      for (const std::string& n : one) out.push_back(n + k);
    return out;
  }

  std::optional<InputLengthLimit> max_input_length() const override {
    return InputLengthLimit{cfg_.max_seq_len, "max_seq_len of the config"};
  }

  std::string config_json() const override {
    nlohmann::json j = {
        {"vocab_size", cfg_.vocab_size},
        {"transformer_dim", cfg_.dim},
        {"transformer_hidden_dim", cfg_.hidden},
        {"num_head", cfg_.num_head},
        {"head_dim", cfg_.head_dim},
        {"num_layers", cfg_.num_layers},
        {"max_seq_len", cfg_.max_seq_len},
        {"num_classes", cfg_.num_classes},
        {"filter_layers", cfg_.filter_layers},
        {"pooling_mode", cfg_.pooling_mode},
    };
    if (!cfg_.filter_layers.empty()) j["filter_ratio"] = cfg_.filter_ratio;
    if (cfg_.dual) j["dual"] = true;
    return j.dump();
  }

  void build(GraphContext& c) const override;

 private:
  // The shared encoder over one input pair (suffix "" or "_0" / "_1"): LN(X) [B, T', D], or
  // kNoValue after c.fail.
  ValueId encode(GraphContext& c, const std::string& suffix) const;

  ValueId attention(GraphContext& c, ValueId x, int64_t layer, ValueId mask) const {
    const std::string p = layer_prefix(layer) + "mha.";
    AttentionSpec spec{p + "W_q",
                       p + "W_k",
                       p + "W_v",
                       p + "ff",
                       cfg_.num_head,
                       cfg_.head_dim,
                       float(1.0 / std::sqrt(double(cfg_.head_dim))),
                       false,
                       p + "attention"};
    return multi_head_attention(c, x, x, spec, mask);
  }

  FourierLraConfig cfg_;
  std::vector<bool> filter_;
};

ValueId FourierLra::encode(GraphContext& c, const std::string& suffix) const {
  GraphBuilder& b = c.b;
  const std::string ids_name = "input_ids" + suffix, mask_name = "attention_mask" + suffix;
  const InputLengthLimit limit = *max_input_length();
  const TokenInputs in = token_inputs(c, limit.tokens, limit.source, ids_name, mask_name);
  if (!c.ok()) return kNoValue;
  const bool has_filter = !cfg_.filter_layers.empty();
  const int64_t t = in.length;
  if (has_filter && t < 2) {
    c.fail(invalid_argument("input '" + ids_name +
                            "': a filter layer needs N >= 2 (the CLS slot plus one token to "
                            "filter), found N = 1"));
    return kNoValue;
  }
  const std::string p0 = suffix.empty() ? "" : "encoder" + suffix + ".";

  // append_cls (model_wrapper.py): [CLS, ids[:, :T-1]] and [1, mask[:, :T-1]].
  const float cls = float(cfg_.vocab_size - 1);  // exact: vocab_size <= 2^24
  const ValueId ids =
      b.pad({slice(c, in.ids, 1, 0, t - 1)}, {.axis = 1, .before = 1, .value = cls}, p0 + "append_cls.ids");
  ValueId mask = kNoValue;
  if (in.mask != kNoValue)
    mask = b.pad({slice(c, mask_to_u8(c, in.mask), 1, 0, t - 1)}, {.axis = 1, .before = 1, .value = 1.0f},
                 p0 + "append_cls.mask");

  ValueId x = embedding(c, ids, "model.embeddings.word_embeddings");
  x = add_learned_positions(c, x, "model.embeddings.position_embeddings", 0);
  c.debug(x, "debug.embeddings" + suffix);

  int64_t len = t;  // current length, CLS included
  for (int64_t i = 0; i < cfg_.num_layers; ++i) {
    const std::string p = layer_prefix(i);
    const std::string tag = "debug.layer" + std::to_string(i);
    if (filter_[size_t(i)]) {
      // attention_dct.py: CLS stays out of the filter; M uses the length with CLS, the DCT
      // runs over the other len-1 positions, and the slice [:M] caps at len-1.
      const ValueId z = layer_norm(c, x, p + "norm1", kLayerNormEps);
      const ValueId s = filter_after_cls(c, z, &len, cfg_.filter_ratio, p0 + p + "filter");
      c.debug(s, tag + ".filtered" + suffix);
      // The residual is the filtered, normalised S, and the mask is "not applicable anymore".
      x = b.add({s, attention(c, s, i, kNoValue)}, {}, p0 + p + "residual1");
    } else {
      // attention.py applies the mask only while len(Q) == len(mask).
      const ValueId layer_mask = len == t ? mask : kNoValue;
      x = b.add({x, attention(c, layer_norm(c, x, p + "norm1", kLayerNormEps), i, layer_mask)}, {},
                p0 + p + "residual1");
    }
    const ValueId h = layer_norm(c, x, p + "norm2", kLayerNormEps);
    x = b.add({x, feed_forward(c, h, p + "mlpblock.0", p + "mlpblock.3", Activation::gelu)}, {},
              p0 + p + "residual2");
    c.debug(x, tag + ".output" + suffix);
  }

  x = layer_norm(c, x, "model.norm", kLayerNormEps);
  // model.py: X = norm(X) * mask[:, :, None] on the softmax path only.
  if (!has_filter && mask != kNoValue)
    x = b.mul({x, mask_to_f32_column(c, mask)}, {}, p0 + "model.norm.mask");
  return c.ok() ? x : kNoValue;
}

void FourierLra::build(GraphContext& c) const {
  GraphBuilder& b = c.b;
  if (!cfg_.dual) {
    const ValueId x = encode(c, "");
    if (!c.ok()) return;
    c.output(x, "last_hidden_state");
    const ValueId pooled = first_token(c, x);
    c.output(pooled, "pooled");
    c.output(
        feed_forward(c, pooled, "seq_classifer.mlpblock.0", "seq_classifer.mlpblock.2", Activation::relu),
        "logits");
    return;
  }
  // ModelForSCDual: the one encoder over each input, SCHeadDual over [p0, p1, p0 * p1, p0 - p1].
  const ValueId x0 = encode(c, "_0");
  if (!c.ok()) return;
  const ValueId x1 = encode(c, "_1");
  if (!c.ok()) return;
  const int64_t b0 = c.desc(x0).dim(0), b1 = c.desc(x1).dim(0);
  if (b0 != b1) {
    c.fail(invalid_argument("inputs 'input_ids_0' and 'input_ids_1': the batch sizes must match, found " +
                            std::to_string(b0) + " and " + std::to_string(b1)));
    return;
  }
  c.output(x0, "last_hidden_state_0");
  c.output(x1, "last_hidden_state_1");
  const ValueId p0 = first_token(c, x0), p1 = first_token(c, x1);
  const ValueId features =
      b.concat({p0, p1, b.mul({p0, p1}, {}, "dual.product"), b.sub({p0, p1}, {}, "dual.difference")},
               {.axis = -1}, "dual.features");
  c.output(
      feed_forward(c, features, "seq_classifer.mlpblock.0", "seq_classifer.mlpblock.2", Activation::relu),
      "logits");
}

}  // namespace

Result<std::unique_ptr<Architecture>> parse_fourier_lra_config(std::string_view config_json) {
  LR_ASSIGN_OR_RETURN(ConfigReader r, ConfigReader::parse(config_json, "fourier-lra config"));
  constexpr int64_t kMaxDim = int64_t(1) << 20;
  FourierLraConfig c;
  // vocab_size - 1 (the CLS id) goes through a float pad value: keep it exact.
  LR_ASSIGN_OR_RETURN(c.vocab_size, r.integer("vocab_size", 1, int64_t(1) << 24));
  LR_ASSIGN_OR_RETURN(c.dim, r.integer("transformer_dim", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(c.hidden, r.integer("transformer_hidden_dim", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(c.num_head, r.integer("num_head", 1, 4096));
  if (!r.has("head_dim") && c.dim % c.num_head != 0)
    return r.error("head_dim", "missing, and transformer_dim " + std::to_string(c.dim) +
                                   " is not a multiple of num_head " + std::to_string(c.num_head));
  LR_ASSIGN_OR_RETURN(c.head_dim, r.integer_or("head_dim", c.dim / c.num_head, 1, kMaxDim));
  if (c.num_head * c.head_dim > kMaxDim)
    return r.error("head_dim", "num_head * head_dim = " + std::to_string(c.num_head * c.head_dim) +
                                   " exceeds " + std::to_string(kMaxDim));
  LR_ASSIGN_OR_RETURN(c.num_layers, r.integer("num_layers", 0, 1024));
  LR_ASSIGN_OR_RETURN(c.max_seq_len, r.integer("max_seq_len", 1, int64_t(1) << 30));
  LR_ASSIGN_OR_RETURN(c.num_classes, r.integer("num_classes", 1, kMaxDim));
  LR_RETURN_IF_ERROR(
      r.filter_layers("filter_layers", "filter_ratio", c.num_layers, &c.filter_layers, &c.filter_ratio));
  LR_ASSIGN_OR_RETURN(c.pooling_mode, r.string_or("pooling_mode", "CLS"));
  if (c.pooling_mode != "CLS")
    return unsupported("fourier-lra config: field 'pooling_mode': only \"CLS\" is implemented, found \"" +
                       c.pooling_mode + "\"");
  if (r.has("embedding_dim")) {
    LR_ASSIGN_OR_RETURN(const int64_t e, r.integer("embedding_dim", 1, kMaxDim));
    if (e != c.dim)
      return r.error("embedding_dim", "must equal transformer_dim " + std::to_string(c.dim) +
                                          " (the official "
                                          "model asserts it), found " +
                                          std::to_string(e));
  }
  LR_ASSIGN_OR_RETURN(c.dual, r.boolean_or("dual", false));
  for (const char* k : {"dropout_prob", "attention_dropout", "attention_grad_checkpointing",
                        "mixed_precision", "learn_pos_emb", "tied_weights", "attn_type"})
    r.ignore(k);
  LR_RETURN_IF_ERROR(r.finish());
  return std::unique_ptr<Architecture>(new FourierLra(std::move(c)));
}

}  // namespace longrun::models
