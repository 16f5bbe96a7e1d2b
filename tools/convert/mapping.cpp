#include "mapping.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "mapping_layouts.h"

namespace longrun::convert {
namespace {

// docs/models.md#lra-encoder: the official LUMIA-Group/FourierTransformer LRA code saves
// torch.save({"model_state_dict": model.module.state_dict()}), so names carry no "module."
// prefix but sit under "model_state_dict"; other DataParallel saves keep "module.".
// Parameter names are the native ones (the family table uses the official module names).
// The LRA config has no key for the Retrieval task's ModelForSCDual (run_tasks.py picks it by
// task name); its classifier reads [p0, p1, p0 * p1, p0 - p1], so a first classifier Linear
// 4 * transformer_dim wide means dual, unless the config sets it.
Result<std::string> complete_fourier_lra_config(const std::string& config_json, const SourceShapes& tensors) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("config: not a JSON object");
  if (j.contains("dual") || !j.contains("transformer_dim") || !j["transformer_dim"].is_number_integer())
    return config_json;  // the family's parser decides
  const int64_t d = j["transformer_dim"].get<int64_t>();
  for (const auto& [name, shape] : tensors)
    if (name == "seq_classifer.mlpblock.0.weight" && shape.size() == 2 && d > 0 && d < (int64_t(1) << 40))
      j["dual"] = shape[1] == 4 * d;
  return j.dump();
}

const SourceLayout kFourierLra{
    "fourier-lra-official",
    {"fourier-lra"},
    "LUMIA-Group/FourierTransformer LRA/code checkpoints (model_state_dict wrapper, optional module. prefix)",
    {"model_state_dict.", "module."},
    {{"optimizer_state_dict.", "optimizer state (training only)"},
     {"lr_scheduler_state_dict.", "scheduler state (training only)"},
     {"optimizer.", "optimizer state (training only)"}},
    {},
    {},
    complete_fourier_lra_config};

}  // namespace

// HF *ForMaskedLM / *ForPreTraining save the head; BertModel / RobertaModel save the pooler
// (RobertaForMaskedLM and BertForMaskedLM are built with add_pooling_layer=False). The
// tensors present decide both flags unless the config (or --set) already does.
Result<std::string> complete_encoder_config(const std::string& config_json, const SourceShapes& names,
                                            std::string_view head_prefix) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("config: not a JSON object");
  if (!j.contains("mlm_head")) j["mlm_head"] = any_starts_with(names, head_prefix);
  if (!j.contains("add_pooling_layer")) j["add_pooling_layer"] = any_starts_with(names, "pooler.");
  return j.dump();
}

namespace {

Result<std::string> complete_bert_config(const std::string& c, const SourceShapes& n) {
  return complete_encoder_config(c, n, "cls.predictions.");
}
Result<std::string> complete_roberta_config(const std::string& c, const SourceShapes& n) {
  return complete_encoder_config(c, n, "lm_head.");
}

// Hugging Face BertModel / BertForMaskedLM / BertForPreTraining (save_pretrained or
// torch.save(state_dict)): the base model under "bert.", heads at the top level. The MLM
// decoder is tied to the word embeddings (decoder.bias to cls.predictions.bias);
// pytorch_model.bin keeps those copies, model.safetensors drops them.
const SourceLayout kHfBert{
    "hf-bert",
    {"bert", "fourier-bert"},
    "Hugging Face BERT (BertModel, BertForMaskedLM, BertForPreTraining; bert. prefix, tied decoder copies)",
    {"bert."},
    {{"embeddings.position_ids", "buffer (positions are computed)"},
     {"embeddings.token_type_ids", "buffer (zeros)"},
     {"cls.seq_relationship.", "next-sentence-prediction head (not part of the bert family)"}},
    {},
    {{"cls.predictions.decoder.weight", "embeddings.word_embeddings.weight"},
     {"cls.predictions.decoder.bias", "cls.predictions.bias"}},
    complete_bert_config};

// Hugging Face RobertaModel / RobertaForMaskedLM: "roberta." prefix, lm_head at the top level.
const SourceLayout kHfRoberta{
    "hf-roberta",
    {"roberta", "fourier-roberta"},
    "Hugging Face RoBERTa (RobertaModel, RobertaForMaskedLM; roberta. prefix, tied decoder copies)",
    {"roberta."},
    {{"embeddings.position_ids", "buffer (positions are computed)"},
     {"embeddings.token_type_ids", "buffer (zeros)"}},
    {},
    {{"lm_head.decoder.weight", "embeddings.word_embeddings.weight"},
     {"lm_head.decoder.bias", "lm_head.bias"}},
    complete_roberta_config};

// Hugging Face BartForConditionalGeneration: the token table is model.shared; the encoder's
// and decoder's embed_tokens and lm_head are the same Parameter (saved once by safetensors,
// three more times by pytorch_model.bin).
const SourceLayout kHfBart{
    "hf-bart",
    {"bart", "fourier-bart"},
    "Hugging Face BART (BartForConditionalGeneration; embed_tokens / lm_head tied to model.shared)",
    {},
    {},
    {},
    {{"model.encoder.embed_tokens.weight", "model.shared.weight"},
     {"model.decoder.embed_tokens.weight", "model.shared.weight"},
     {"lm_head.weight", "model.shared.weight"}}};

// The shipped fastformer.json has no num_labels (the notebook hard-codes dense_linear's 4
// outputs): the rows of dense_linear.weight give it unless the config sets it.
Result<std::string> complete_fastformer_config(const std::string& config_json, const SourceShapes& tensors) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("config: not a JSON object");
  if (j.contains("num_labels")) return config_json;
  for (const auto& [name, shape] : tensors)
    if (name == "dense_linear.weight" && shape.size() == 2) j["num_labels"] = shape[0];
  return j.dump();
}

// wuch15/Fastformer notebook (docs/checkpoints.md#fastformer: no released checkpoint): torch.save of the
// Model's state_dict, names as the family's table; optional DataParallel "module." and a
// {"model_state_dict": ...} / {"state_dict": ...} wrapper as training scripts write.
const SourceLayout kFastformerOfficial{"fastformer-official",
                                       {"fastformer"},
                                       "wuch15/Fastformer notebook Model state_dict (optional "
                                       "model_state_dict/state_dict wrapper, module. prefix)",
                                       {"model_state_dict.", "state_dict.", "module."},
                                       {{"optimizer_state_dict.", "optimizer state (training only)"},
                                        {"optimizer.", "optimizer state (training only)"}},
                                       {},
                                       {},
                                       complete_fastformer_config};

// Hugging Face BartModel (no lm_head, no "model." prefix): "model." added; the encoder's and
// decoder's embed_tokens are copies of model.shared.weight (save_pretrained drops them,
// torch.save keeps them); the model has no final_logits_bias (zeros, as HF initialises it).
const SourceLayout kHfBartModel{
    "hf-bart-model",
    {"bart", "fourier-bart"},
    "Hugging Face BartModel (bare: no model. prefix, no lm_head; final_logits_bias zeros)",
    {},
    {},
    {},
    {{"model.encoder.embed_tokens.weight", "model.shared.weight"},
     {"model.decoder.embed_tokens.weight", "model.shared.weight"}},
    nullptr,
    "model.",
    {"final_logits_bias"}};

}  // namespace

const SourceLayout& hf_bart_model_layout() { return kHfBartModel; }

namespace {

// In this order: with no --layout, a checkpoint converts with the layout of its arch that
// maps it without problems (convert.cpp tries them all).
const SourceLayout* const kLayouts[] = {&kFourierLra,
                                        &kHfBert,
                                        &kHfRoberta,
                                        &kHfBart,
                                        &fairseq_transformer_layout(),
                                        &kFastformerOfficial,
                                        &fairseq_bart_layout(),
                                        &kHfBartModel,
                                        &fairseq_lasformer_layout(),
                                        &fairseq_roberta_layout(),
                                        &flax_combiner_layout(),
                                        &tf_combiner_layout()};

}  // namespace

namespace {

std::vector<std::string_view> segments(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t dot = s.find('.');
    out.push_back(s.substr(0, dot));
    if (dot == std::string_view::npos) return out;
    s.remove_prefix(dot + 1);
  }
}

}  // namespace

std::optional<std::string> rename_prefix(std::string_view name, std::string_view from, std::string_view to) {
  const auto n = segments(name), f = segments(from);
  if (n.size() < f.size()) return std::nullopt;
  std::vector<std::string_view> wild;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == "*")
      wild.push_back(n[i]);
    else if (f[i] != n[i])
      return std::nullopt;
  }
  std::string out;
  size_t w = 0;
  for (std::string_view t : segments(to)) {
    if (!out.empty()) out += '.';
    out += t == "*" && w < wild.size() ? wild[w++] : t;
  }
  for (size_t i = f.size(); i < n.size(); ++i) (out += '.') += n[i];
  return out;
}

std::span<const SourceLayout> source_layouts() {
  static const std::vector<SourceLayout> all = [] {
    std::vector<SourceLayout> v;
    for (const SourceLayout* l : kLayouts) v.push_back(*l);
    return v;
  }();
  return all;
}

std::vector<const SourceLayout*> layouts_for_arch(std::string_view arch) {
  std::vector<const SourceLayout*> out;
  for (const SourceLayout& l : source_layouts())
    if (std::find(l.archs.begin(), l.archs.end(), arch) != l.archs.end()) out.push_back(&l);
  return out;
}

const SourceLayout* find_layout(std::string_view name) {
  for (const SourceLayout& l : source_layouts())
    if (l.name == name) return &l;
  return nullptr;
}

Result<std::string> detect_arch(const std::string& config_json) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("config: not a JSON object");
  const auto fairseq_arch = j.find("arch");
  if (!j.contains("model_type") && fairseq_arch != j.end() && fairseq_arch->is_string()) {
    const std::string a = fairseq_arch->get<std::string>();
    if (a.starts_with("transformer")) return std::string("transformer");
    if (a.starts_with("lasformer")) return std::string("lasformer");
    if (a.starts_with("bart")) return std::string(j.contains("dct_layers") ? "fourier-bart" : "bart");
    if (a.starts_with("roberta"))
      return std::string(j.contains("filter_layers") ? "fourier-roberta" : "roberta");
    return unsupported(
        "fairseq arch '" + a +
        "' has no source layout (known: transformer*, lasformer*, bart*, roberta*): give --arch");
  }
  const auto type = j.find("model_type");
  if (type == j.end() || !type->is_string()) return invalid_argument("config has no model_type: give --arch");
  const std::string t = type->get<std::string>();
  if (t == "bert" || t == "roberta") return (j.contains("filter_layers") ? "fourier-" : "") + t;
  if (t == "bart") return std::string(j.contains("dct_layers") ? "fourier-bart" : "bart");
  return unsupported("config model_type '" + t +
                     "' has no source layout (known: bert, roberta, bart): give --arch");
}

}  // namespace longrun::convert
