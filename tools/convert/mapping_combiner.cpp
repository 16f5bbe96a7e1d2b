// Combiner source layouts (docs/models.md#combiner-parameters, models/combiner/combiner.h). The native names
// are the Flax module paths of the official JAX LanguageModel, so the Flax layout only strips the wrappers
// Flax and flax.optim put around them; the TF1 layout renames the TF variable scopes of combiner/tf onto the
// same paths.
#include <charconv>
#include <nlohmann/json.hpp>

#include "mapping_layouts.h"

namespace longrun::convert {
namespace {

// flax.serialization.to_bytes of {"params": ...} (linen variables), of a flax.optim
// Optimizer ({"target": params, "state": {"step", "param_states"}}), or of a TrainState
// ({"step", "params", "opt_state"}): paths "/"-joined by the Flax reader.
const SourceLayout kFlaxCombiner{
    "flax-combiner",
    {"combiner"},
    "google-research combiner/jax LanguageModel params as Flax msgpack (--from flax; params/, "
    "target/ wrappers; kernels keep the Flax layout, which is the native one)",
    {"target/", "params/"},
    {{"state/", "flax.optim optimizer state (training only)"},
     {"opt_state/", "optax optimizer state (training only)"},
     {"cache/", "decoding cache collection (recomputed)"}},
    {}};

// The module the family names each attention variant after (combiner.cpp, JAX class names).
Result<std::string> attention_module(const std::string& config_json) {
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  const auto a = j.is_object() ? j.find("attention") : j.end();
  if (a == j.end() || !a->is_string())
    return invalid_argument(
        "config: field 'attention' (fixed | logsparse | axial | mixture) is needed to place "
        "the TF attention variables");
  const std::string v = a->get<std::string>();
  if (v == "fixed") return std::string("_SelfAttSqrtn_0");
  if (v == "logsparse") return std::string("_SelfAttLogn_0");
  if (v == "axial") return std::string("_SelfAttAxialRowmajor_0");
  if (v == "mixture") return std::string("_AxialMixtureAtt_0");
  return invalid_argument("config: field 'attention': expected fixed, logsparse, axial or mixture, found '" +
                          v + "'");
}

// Whether an axial config has the row-summary projections W1 / W2 (row_summary 'proj', the
// default), which move the output kernel to DenseGeneral_2 (combiner_model.h).
bool axial_projections(const std::string& config_json) {
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (!j.is_object()) return true;
  const auto r = j.find("row_summary");
  return r == j.end() || !r->is_string() || r->get<std::string>() == "proj";
}

// "gamma" / "beta" -> "scale" / "bias"; "weight" -> "kernel"; "bias" stays.
std::optional<std::string> tf_leaf(std::string_view leaf, bool norm) {
  if (norm) {
    if (leaf == "gamma") return "scale";
    if (leaf == "beta") return "bias";
    return std::nullopt;
  }
  if (leaf == "weight" || leaf == "weights") return "kernel";
  if (leaf == "bias") return "bias";
  return std::nullopt;
}

// combiner/tf variable scopes (docs/models.md#combiner-parameters) -> the Flax paths:
//   word_embeddings/weights -> Embed_0/embedding; final_norm/{gamma,beta} ->
//   autoreg_model/LayerNorm_0/{scale,bias}; softmax_bias -> autoreg_model/Dense_0/bias (the
//   kernel is the tied embedding table, transposed: a tie rule);
//   layer_<lll>/attn/pre_norm -> LayerNorm_0; attn/{q,k,v}/weight -> <Attn>/{query,key,value}/kernel;
//   attn/dense/weight -> the output kernel (DenseGeneral_0; axial with row_summary 'proj':
//   DenseGeneral_2);
//   attn/rowmajor_param_post/{dense, pre_norm, dense_1} -> <Attn>/{DenseGeneral_0, LayerNorm_0,
//   DenseGeneral_1}; ffn/pre_norm -> LayerNorm_1; ffn/dense, ffn/dense_1 -> MlpBlock_0/Dense_0, Dense_1.
// The TF attention biases have no slot in the JAX model: accepted only when all zeros. The
// learned position table cannot be represented (the family adds the fixed sinusoid).
Result<Renamed> rename_tf(std::string_view name, const std::string& config_json) {
  const std::string n(name);
  if (n == "word_embeddings/weights" || n == "word_embeddings/weight")
    return Renamed{"Embed_0/embedding", {}};
  if (n == "softmax_bias") return Renamed{"autoreg_model/Dense_0/bias", {}};
  if (n.starts_with("pos_embeddings/"))
    return unsupported("tensor '" + n +
                       "': a learned position table (the TF model); the combiner family adds the fixed "
                       "sinusoid of the JAX model and has no slot for it");
  const size_t slash = n.rfind('/');
  if (slash == std::string::npos) return Renamed{n, {}};
  const std::string scope = n.substr(0, slash), leaf = n.substr(slash + 1);
  if (scope == "final_norm") {
    if (auto l = tf_leaf(leaf, true)) return Renamed{"autoreg_model/LayerNorm_0/" + *l, {}};
    return Renamed{n, {}};
  }
  if (!scope.starts_with("layer_")) return Renamed{n, {}};
  const size_t sep = scope.find('/');
  const std::string digits = scope.substr(6, sep == std::string::npos ? std::string::npos : sep - 6);
  int64_t layer = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), layer);
  if (sep == std::string::npos || digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
    return Renamed{n, {}};
  const std::string rest = scope.substr(sep + 1);
  const std::string base = "autoreg_model/transformer_layer_" + std::to_string(layer) + "/";
  LR_ASSIGN_OR_RETURN(const std::string attn, attention_module(config_json));
  const bool axial = attn == "_SelfAttAxialRowmajor_0" && axial_projections(config_json);
  struct Scope {
    const char* tf;
    std::string flax;
    bool norm;
    bool bias_has_slot;
  };
  const Scope scopes[] = {
      {"attn/pre_norm", base + "LayerNorm_0", true, true},
      {"attn/q", base + attn + "/query", false, false},
      {"attn/k", base + attn + "/key", false, false},
      {"attn/v", base + attn + "/value", false, false},
      {"attn/dense", base + attn + (axial ? "/DenseGeneral_2" : "/DenseGeneral_0"), false, false},
      {"attn/rowmajor_param_post/dense", base + attn + "/DenseGeneral_0", false, false},
      {"attn/rowmajor_param_post/pre_norm", base + attn + "/LayerNorm_0", true, true},
      {"attn/rowmajor_param_post/dense_1", base + attn + "/DenseGeneral_1", false, false},
      {"ffn/pre_norm", base + "LayerNorm_1", true, true},
      {"ffn/dense", base + "MlpBlock_0/Dense_0", false, true},
      {"ffn/dense_1", base + "MlpBlock_0/Dense_1", false, true},
  };
  for (const Scope& s : scopes) {
    if (rest != s.tf) continue;
    const auto l = tf_leaf(leaf, s.norm);
    if (!l) return Renamed{n, {}};
    if (*l == "bias" && !s.bias_has_slot)
      return Renamed{n, "TF attention bias (the JAX model has none; all zeros)"};
    return Renamed{s.flax + "/" + *l, {}};
  }
  return Renamed{n, {}};
}

const SourceLayout kTfCombiner = [] {
  SourceLayout l{"tf-combiner",
                 {"combiner"},
                 "google-research combiner/tf variable names (layer_<lll>/attn|ffn/..., word_embeddings, "
                 "final_norm, softmax_bias) in any container; tied head = word_embeddings^T; the TF "
                 "attention biases must be zero; no learned positions",
                 {},
                 {},
                 {{"autoreg_model/Dense_0/kernel", "Embed_0/embedding", true}}};
  l.rename = rename_tf;
  return l;
}();

}  // namespace

const SourceLayout& flax_combiner_layout() { return kFlaxCombiner; }
const SourceLayout& tf_combiner_layout() { return kTfCombiner; }

}  // namespace longrun::convert
