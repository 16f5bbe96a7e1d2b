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

bool any_starts_with(const SourceShapes& tensors, std::string_view prefix) {
  return std::any_of(tensors.begin(), tensors.end(),
                     [&](const auto& t) { return t.first.starts_with(prefix); });
}

const std::vector<int64_t>* shape_of(const SourceShapes& tensors, std::string_view name) {
  for (const auto& t : tensors)
    if (t.first == name) return &t.second;
  return nullptr;
}

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

// fairseq args carry every training option; the transformer family reads these (families.h)
// and refuses unknown keys, so only they are kept. The dictionary sizes are not in args:
// they are the embedding tables' rows.
constexpr const char* kTransformerKeys[] = {"encoder_embed_dim",
                                            "decoder_embed_dim",
                                            "encoder_ffn_embed_dim",
                                            "decoder_ffn_embed_dim",
                                            "encoder_layers",
                                            "decoder_layers",
                                            "encoder_attention_heads",
                                            "decoder_attention_heads",
                                            "encoder_normalize_before",
                                            "decoder_normalize_before",
                                            "encoder_learned_pos",
                                            "decoder_learned_pos",
                                            "layernorm_embedding",
                                            "no_scale_embedding",
                                            "activation_fn",
                                            "share_all_embeddings",
                                            "share_decoder_input_output_embed",
                                            "max_source_positions",
                                            "max_target_positions",
                                            "src_vocab_size",
                                            "tgt_vocab_size",
                                            "pad",
                                            "eos"};

Result<std::string> complete_fairseq_transformer_config(const std::string& config_json,
                                                        const SourceShapes& tensors) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("config: not a JSON object");
  nlohmann::json out = nlohmann::json::object();
  for (const char* k : kTransformerKeys)
    if (j.contains(k) && !j[k].is_null()) out[k] = j[k];
  const auto* src = shape_of(tensors, "encoder.embed_tokens.weight");
  const auto* tgt = shape_of(tensors, "decoder.embed_tokens.weight");
  if (!tgt) tgt = shape_of(tensors, "decoder.output_projection.weight");
  if (!tgt) tgt = src;
  if (!out.contains("src_vocab_size") && src && !src->empty()) out["src_vocab_size"] = (*src)[0];
  if (!out.contains("tgt_vocab_size") && tgt && !tgt->empty()) out["tgt_vocab_size"] = (*tgt)[0];
  return out.dump();
}

// fairseq TransformerModel checkpoints after the reader's upgrades (fairseq.*: "model" state
// dict, in_proj split, layer_norms renamed, version / sinusoidal buffers dropped): names are
// the native ones. Tied tables appear once per use in the state dict.
const SourceLayout kFairseqTransformer{"fairseq-transformer",
                                       {"transformer"},
                                       "fairseq TransformerModel (--from fairseq: args/cfg.model "
                                       "hyper-parameters, dictionary sizes from the tables)",
                                       {},
                                       {},
                                       {},
                                       {{"decoder.output_projection.weight", "decoder.embed_tokens.weight"},
                                        {"decoder.output_projection.weight", "encoder.embed_tokens.weight"},
                                        {"decoder.embed_tokens.weight", "encoder.embed_tokens.weight"}},
                                       complete_fairseq_transformer_config};

// fairseq BART args -> the HF config names the bart / fourier-bart families read
// (CHECKPOINTS.md §3: names 1:1 below "model."; positions [max + 2, D]; the official
// Fourier-BART adds only args: dct_layers, dct_percentage, dct_lowpass, global_residual).
Result<std::string> complete_fairseq_bart_config(const std::string& config_json,
                                                 const SourceShapes& tensors) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("config: not a JSON object");
  nlohmann::json out = nlohmann::json::object();
  auto copy = [&](const char* from, const char* to) {
    if (j.contains(from) && !j[from].is_null()) out[to] = j[from];
  };
  copy("encoder_embed_dim", "d_model");
  copy("encoder_layers", "encoder_layers");
  copy("decoder_layers", "decoder_layers");
  copy("encoder_attention_heads", "encoder_attention_heads");
  copy("decoder_attention_heads", "decoder_attention_heads");
  copy("encoder_ffn_embed_dim", "encoder_ffn_dim");
  copy("decoder_ffn_embed_dim", "decoder_ffn_dim");
  copy("max_source_positions", "max_position_embeddings");
  copy("activation_fn", "activation_function");
  for (const char* k : {"dct_layers", "dct_percentage", "dct_lowpass", "global_residual", "pad_token_id",
                        "eos_token_id", "decoder_start_token_id", "vocab_size", "scale_embedding"})
    copy(k, k);
  // fairseq writes list-valued args as strings ("[0, 1]") in some versions.
  if (out.contains("dct_layers") && out["dct_layers"].is_string()) {
    nlohmann::json l = nlohmann::json::parse(out["dct_layers"].get<std::string>(), nullptr, false);
    if (l.is_discarded()) return invalid_argument("config: field 'dct_layers': not a list");
    out["dct_layers"] = l;
  }
  if (j.contains("max_target_positions") && j.contains("max_source_positions") &&
      j["max_target_positions"] != j["max_source_positions"])
    return unsupported("config: fields 'max_source_positions' and 'max_target_positions' differ (" +
                       j["max_source_positions"].dump() + ", " + j["max_target_positions"].dump() +
                       "); the bart family has one max_position_embeddings");
  if (!out.contains("scale_embedding") && j.contains("no_scale_embedding") &&
      j["no_scale_embedding"].is_boolean())
    out["scale_embedding"] = !j["no_scale_embedding"].get<bool>();
  const auto* table = shape_of(tensors, "model.encoder.embed_tokens.weight");
  if (!out.contains("vocab_size") && table && !table->empty()) out["vocab_size"] = (*table)[0];
  return out.dump();
}

// fairseq BARTModel (bart.base / bart.large model.pt, the official Fourier-BART): the reader's
// "model" state dict gets "model." prepended; the shared table appears as encoder and decoder
// embed_tokens and output_projection; there is no final_logits_bias (zeros).
const SourceLayout kFairseqBart{"fairseq-bart",
                                {"bart", "fourier-bart"},
                                "fairseq BART / official Fourier-BART (--from fairseq: model. prefix added, "
                                "embed_tokens / output_projection tied "
                                "to model.shared, final_logits_bias zeros)",
                                {},
                                {},
                                {},
                                {{"model.encoder.embed_tokens.weight", "model.shared.weight"},
                                 {"model.decoder.embed_tokens.weight", "model.shared.weight"},
                                 {"model.decoder.output_projection.weight", "model.shared.weight"}},
                                complete_fairseq_bart_config,
                                "model.",
                                {"final_logits_bias"}};

// wuch15/Fastformer notebook (CHECKPOINTS.md: no released checkpoint): torch.save of the
// Model's state_dict, names as the family's table; optional DataParallel "module." and a
// {"model_state_dict": ...} / {"state_dict": ...} wrapper as training scripts write.
const SourceLayout kFastformerOfficial{"fastformer-official",
                                       {"fastformer"},
                                       "wuch15/Fastformer notebook Model state_dict (optional "
                                       "model_state_dict/state_dict wrapper, module. prefix)",
                                       {"model_state_dict.", "state_dict.", "module."},
                                       {{"optimizer_state_dict.", "optimizer state (training only)"},
                                        {"optimizer.", "optimizer state (training only)"}},
                                       {}};

const SourceLayout* const kLayouts[] = {
    &kFourierLra, &kHfBert, &kHfRoberta, &kHfBart, &kFairseqTransformer, &kFastformerOfficial, &kFairseqBart};

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
  const auto fairseq_arch = j.find("arch");
  if (!j.contains("model_type") && fairseq_arch != j.end() && fairseq_arch->is_string()) {
    const std::string a = fairseq_arch->get<std::string>();
    if (a.starts_with("transformer")) return std::string("transformer");
    if (a.starts_with("bart")) return std::string(j.contains("dct_layers") ? "fourier-bart" : "bart");
    return unsupported("fairseq arch '" + a +
                       "' has no source layout (known: transformer*, bart*): give --arch");
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
