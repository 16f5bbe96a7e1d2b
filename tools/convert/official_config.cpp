#include "official_config.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace longrun::convert {
namespace {

using nlohmann::json;

struct Translator {
  json j;
  std::string what;  // e.g. "fourier-lra config (LRA model_config)"
  std::vector<std::string> notes;

  bool has(const char* key) const { return j.contains(key); }
  // Drops `key` when present and notes why it does not matter for inference.
  void drop(const char* key, const std::string& reason) {
    if (!j.contains(key)) return;
    notes.push_back("'" + std::string(key) + "' " + j[key].dump() + ": " + reason);
    j.erase(key);
  }
  Status error(const char* key, const std::string& message) const {
    return format_error(what + ": field '" + key + "': " + message);
  }
  Status refuse(const char* key, const std::string& message) const {
    return unsupported(what + ": field '" + key + "': " + message);
  }
};

// LUMIA-Group/FourierTransformer LRA/code: run_tasks.py takes lra_config.py's "model" dict,
// merges extra_attn_config[--model] (attention_grad_checkpointing, dct_percentage), and adds
// layers (--layers "0,2"), mixed_precision and attn_type (--model); model.py puts the DCT
// attention (attention_dct.py) on the layers listed when attn_type starts with "dct".
Status translate_lra(Translator& t) {
  const bool longrun_form = t.has("filter_layers") || t.has("filter_ratio");
  if (longrun_form) {
    // longrun's filter fields decide; the family parser accepts and ignores attn_type there.
    for (const char* k : {"layers", "dct_percentage"})
      if (t.has(k))
        return t.error(k,
                       "the official filter key together with longrun's 'filter_layers' / 'filter_ratio': "
                       "give one form");
    return {};
  }
  if (!t.has("attn_type") && !t.has("layers") && !t.has("dct_percentage")) return {};
  if (!t.has("attn_type"))
    return t.error("attn_type",
                   "missing; the official 'layers' and 'dct_percentage' take effect only with attn_type "
                   "\"dct...\" (run_tasks.py --model)");
  if (!t.j["attn_type"].is_string())
    return t.error("attn_type", "expected a string, found " + t.j["attn_type"].dump());
  const std::string attn = t.j["attn_type"].get<std::string>();
  if (attn == "softmax") {
    t.j["filter_layers"] = json::array();
    t.drop("layers", "unused with attn_type \"softmax\" (every layer is softmax attention)");
    t.drop("dct_percentage", "unused with attn_type \"softmax\"");
  } else if (attn.starts_with("dct")) {
    if (!t.has("layers"))
      return t.error("layers",
                     "missing; attn_type \"" + attn + "\" needs the DCT layers (run_tasks.py --layers)");
    json layers = t.j["layers"];
    if (layers.is_string()) {  // the --layers form, "0,2"
      const std::string s = layers.get<std::string>();
      layers = json::array();
      size_t start = 0;
      while (start <= s.size()) {
        const size_t comma = std::min(s.find(',', start), s.size());
        const std::string item = s.substr(start, comma - start);
        if (item.empty() || item.size() > 6 ||
            !std::all_of(item.begin(), item.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; }))
          return t.error(
              "layers",
              "expected a list of layer indices or their --layers form \"0,2\", found \"" + s + "\"");
        layers.push_back(std::stoll(item));
        start = comma + 1;
      }
    }
    if (!layers.is_array() ||
        !std::all_of(layers.begin(), layers.end(), [](const json& v) { return v.is_number_integer(); }))
      return t.error("layers", "expected a list of layer indices, found " + t.j["layers"].dump());
    if (layers.empty())
      return t.refuse("layers",
                      "attn_type \"" + attn +
                          "\" with no DCT layer: the official model then skips the final mask "
                          "multiplication, which fourier-lra does only with a filter layer; use attn_type "
                          "\"softmax\" for the baseline");
    if (!t.has("dct_percentage"))
      return t.error("dct_percentage", "missing; attn_type \"" + attn + "\" needs the kept fraction");
    if (!t.j["dct_percentage"].is_number())
      return t.error("dct_percentage", "expected a number in (0, 1], found " + t.j["dct_percentage"].dump());
    t.j["filter_layers"] = layers;
    t.j["filter_ratio"] = t.j["dct_percentage"];
    t.j.erase("layers");
    t.j.erase("dct_percentage");
  } else {
    return t.refuse("attn_type", "\"" + attn +
                                     "\" is not implemented (fourier-lra runs \"softmax\" and the DCT "
                                     "attention \"dct...\"; the official code also has \"none\")");
  }
  t.notes.push_back("'attn_type' \"" + attn + "\": filter_layers " + t.j["filter_layers"].dump() +
                    (t.has("filter_ratio") ? ", filter_ratio " + t.j["filter_ratio"].dump() : std::string()));
  t.j.erase("attn_type");
  t.drop("mixed_precision", "autocast in the official scripts; longrun computes in f32");
  t.drop("attention_grad_checkpointing", "training memory only");
  t.drop("dropout_prob", "dropout, training only");
  t.drop("attention_dropout", "dropout, training only");
  t.drop("learn_pos_emb", "not read by the LRA model (its position table is always learned)");
  t.drop("tied_weights", "not read by the LRA model's forward");
  return {};
}

// wuch15/Fastformer fastformer.json, read by the notebook as a transformers BertConfig.
Status translate_fastformer(Translator& t) {
  if (t.has("enable_fp16")) {
    const json& v = t.j["enable_fp16"];
    const bool ok =
        v.is_boolean() || (v.is_string() && (v == "True" || v == "False" || v == "true" || v == "false"));
    if (!ok)
      return t.error("enable_fp16", "expected true / false or \"True\" / \"False\", found " + v.dump());
    t.drop("enable_fp16", "fp16 autocast switch of the training script; longrun computes in f32");
  }
  t.drop("hidden_dropout_prob", "dropout, training only");
  t.drop("attention_probs_dropout_prob", "dropout, training only");
  t.drop("initializer_range", "initialisation, training only");
  t.drop("type_vocab_size", "the notebook's model has no token-type embedding");
  return {};
}

// google-research combiner/jax: main.py builds TransformerConfig(...) and picks the layer with
// -model {mixture, axial, fixed, logn}; LanguageModel's head is Dense(pred_dim = vocab_size).
Status translate_combiner(Translator& t) {
  static const char* const kOfficialOnly[] = {"model",
                                              "output_vocab_size",
                                              "deterministic",
                                              "decode",
                                              "share_param",
                                              "seq_summary",
                                              "window_size",
                                              "architecture",
                                              "use_layernorm",
                                              "share_embeddings",
                                              "logits_via_embedding",
                                              "posemb_init",
                                              "dtype",
                                              "kernel_init",
                                              "bias_init"};
  if (std::none_of(std::begin(kOfficialOnly), std::end(kOfficialOnly),
                   [&](const char* k) { return t.has(k); }))
    return {};  // longrun form
  if (t.has("model")) {
    const json& m = t.j["model"];
    std::string attention;
    if (m == "mixture" || m == "axial" || m == "fixed") attention = m.get<std::string>();
    if (m == "logn") attention = "logsparse";
    if (attention.empty())
      return t.refuse(
          "model",
          "expected \"mixture\", \"axial\", \"fixed\" or \"logn\" (main.py -model), found " + m.dump());
    if (t.has("attention") && t.j["attention"] != attention)
      return t.error("attention", "contradicts 'model' " + m.dump() + " (which means \"" + attention +
                                      "\"), found " + t.j["attention"].dump());
    t.notes.push_back("'model' " + m.dump() + ": attention \"" + attention + "\"");
    t.j["attention"] = attention;
    t.j.erase("model");
  }
  if (t.has("output_vocab_size")) {
    const json& o = t.j["output_vocab_size"];
    if (!o.is_number_integer()) return t.error("output_vocab_size", "expected an integer, found " + o.dump());
    if (t.has("vocab_size") && t.j["vocab_size"] != o)
      return t.refuse("output_vocab_size", "the LM head has vocab_size " + t.j["vocab_size"].dump() +
                                               " outputs (main.py: pred_dim = vocab_size), found " +
                                               o.dump());
    t.drop("output_vocab_size", "equals vocab_size (the head is Dense(vocab_size))");
  }
  if (t.has("posemb_init")) {
    if (!t.j["posemb_init"].is_null())
      return t.refuse("posemb_init",
                      "a learned position table (AddPositionEmbs pos_embedding), which the combiner family "
                      "(the fixed sinusoid) does not have; found " +
                          t.j["posemb_init"].dump());
    t.drop("posemb_init", "null: the fixed sinusoid");
  }
  t.drop("dropout_rate", "dropout, training only");
  t.drop("attention_dropout_rate", "dropout, training only");
  t.drop("deterministic", "the dropout switch, training only");
  t.drop("decode", "the Flax decoding cache switch (longrun's generation has its own cache)");
  t.drop("kernel_init", "initialisation, training only");
  t.drop("bias_init", "initialisation, training only");
  t.drop("dtype", "the JAX computation dtype; longrun computes in f32");
  for (const char* k : {"share_param", "seq_summary", "window_size", "architecture", "use_layernorm",
                        "share_embeddings", "logits_via_embedding"})
    t.drop(k, "not read by main.py's LanguageModel or its four attention layers");
  return {};
}

}  // namespace

Result<TranslatedConfig> translate_official_config(std::string_view arch, const std::string& config_json) {
  Status (*translate)(Translator&) = nullptr;
  std::string what;
  if (arch == "fourier-lra") translate = translate_lra, what = "fourier-lra config (LRA model_config)";
  if (arch == "fastformer") translate = translate_fastformer, what = "fastformer config (fastformer.json)";
  if (arch == "combiner") translate = translate_combiner, what = "combiner config (combiner/jax main.py)";
  if (!translate) return TranslatedConfig{config_json, {}};
  Translator t{json::parse(config_json, nullptr, false), std::move(what), {}};
  if (t.j.is_discarded() || !t.j.is_object())
    return TranslatedConfig{config_json, {}};  // the parser reports it
  LR_RETURN_IF_ERROR(translate(t));
  return TranslatedConfig{t.j.dump(), std::move(t.notes)};
}

}  // namespace longrun::convert
