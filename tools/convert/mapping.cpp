#include "mapping.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace longrun::convert {
namespace {

// MODELS.md §1.2: the official LUMIA-Group/FourierTransformer LRA code saves
// torch.save({"model_state_dict": model.module.state_dict()}), so names carry no "module."
// prefix but sit under "model_state_dict"; other DataParallel saves keep "module.".
// Parameter names are the native ones (the family table uses the official module names).
const SourceLayout kFourierLra{
    "fourier-lra-official",
    {"fourier-lra"},
    "LUMIA-Group/FourierTransformer LRA/code checkpoints (model_state_dict wrapper, optional module. prefix)",
    {"model_state_dict.", "module."},
    {{"optimizer_state_dict.", "optimizer state (training only)"},
     {"lr_scheduler_state_dict.", "scheduler state (training only)"},
     {"optimizer.", "optimizer state (training only)"}},
    {}};

bool any_starts_with(const std::vector<std::string>& names, std::string_view prefix) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.starts_with(prefix); });
}

// HF *ForMaskedLM / *ForPreTraining save the head; BertModel / RobertaModel save the pooler
// (RobertaForMaskedLM and BertForMaskedLM are built with add_pooling_layer=False). The
// tensors present decide both flags unless the config (or --set) already does.
Result<std::string> complete_encoder_config(const std::string& config_json,
                                            const std::vector<std::string>& names,
                                            std::string_view head_prefix) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("config: not a JSON object");
  if (!j.contains("mlm_head")) j["mlm_head"] = any_starts_with(names, head_prefix);
  if (!j.contains("add_pooling_layer")) j["add_pooling_layer"] = any_starts_with(names, "pooler.");
  return j.dump();
}

Result<std::string> complete_bert_config(const std::string& c, const std::vector<std::string>& n) {
  return complete_encoder_config(c, n, "cls.predictions.");
}
Result<std::string> complete_roberta_config(const std::string& c, const std::vector<std::string>& n) {
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

const SourceLayout* const kLayouts[] = {&kFourierLra, &kHfBert, &kHfRoberta, &kHfBart};

}  // namespace

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
  const auto type = j.find("model_type");
  if (type == j.end() || !type->is_string()) return invalid_argument("config has no model_type: give --arch");
  const std::string t = type->get<std::string>();
  if (t == "bert" || t == "roberta") return (j.contains("filter_layers") ? "fourier-" : "") + t;
  if (t == "bart") return std::string(j.contains("dct_layers") ? "fourier-bart" : "bart");
  return unsupported("config model_type '" + t +
                     "' has no source layout (known: bert, roberta, bart): give --arch");
}

}  // namespace longrun::convert
