// fairseq source layouts (docs/checkpoints.md#fairseq-checkpoints), read with --from fairseq (fairseq.*: the
// "model" state dict with fairseq's own upgrades, args / cfg.model as the config):
// Transformer, Lasformer, BART / Fourier-BART, RoBERTa / Fourier-RoBERTa.
#include <nlohmann/json.hpp>

#include "mapping_layouts.h"

namespace longrun::convert {
namespace {

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

// Lasformer = transformer + the selection fields (families.h), under the same names in args.
constexpr const char* kSelectionKeys[] = {"selection_group_size", "selection_dim", "selection_ratio",
                                          "selection_min_keys", "selection_bias"};

Result<std::string> keep_transformer_config(const std::string& config_json, const SourceShapes& tensors,
                                            std::span<const char* const> extra_keys) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("config: not a JSON object");
  nlohmann::json out = nlohmann::json::object();
  for (std::span<const char* const> keys : {std::span<const char* const>(kTransformerKeys), extra_keys})
    for (const char* k : keys)
      if (j.contains(k) && !j[k].is_null()) out[k] = j[k];
  const auto* src = shape_of(tensors, "encoder.embed_tokens.weight");
  const auto* tgt = shape_of(tensors, "decoder.embed_tokens.weight");
  if (!tgt) tgt = shape_of(tensors, "decoder.output_projection.weight");
  if (!tgt) tgt = src;
  if (!out.contains("src_vocab_size") && src && !src->empty()) out["src_vocab_size"] = (*src)[0];
  if (!out.contains("tgt_vocab_size") && tgt && !tgt->empty()) out["tgt_vocab_size"] = (*tgt)[0];
  return out.dump();
}

Result<std::string> complete_fairseq_transformer_config(const std::string& c, const SourceShapes& t) {
  return keep_transformer_config(c, t, {});
}
Result<std::string> complete_fairseq_lasformer_config(const std::string& c, const SourceShapes& t) {
  return keep_transformer_config(c, t, kSelectionKeys);
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
// (docs/checkpoints.md#fairseq-bart: names 1:1 below "model."; positions [max + 2, D]; the official
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

// Lasformer (no public code; docs/models.md#lasformer): a fairseq Transformer whose selection weights are
// stored under the family's documented names ({encoder,decoder}.layers.{i}.{self_attn,
// encoder_attn}.select_{q,k}.{weight,bias}) and whose args carry the selection_* fields.
const SourceLayout kFairseqLasformer{
    "fairseq-lasformer",
    {"lasformer"},
    "fairseq Lasformer (a fairseq Transformer plus select_q / select_k under "
    "the family's names; selection_* fields in args)",
    {},
    {},
    {},
    {{"decoder.output_projection.weight", "decoder.embed_tokens.weight"},
     {"decoder.output_projection.weight", "encoder.embed_tokens.weight"},
     {"decoder.embed_tokens.weight", "encoder.embed_tokens.weight"}},
    complete_fairseq_lasformer_config};

// fairseq RoBERTa (roberta.base / .large model.pt; fairseq >= 0.10 names the encoder
// "encoder.sentence_encoder" and the head "encoder.lm_head", older releases "decoder.*", and
// the embedding LayerNorm "emb_layer_norm"): renamed as transformers'
// convert_roberta_original_pytorch_checkpoint_to_pytorch does.
Result<Renamed> rename_fairseq_roberta(std::string_view name, const std::string&) {
  static constexpr std::pair<const char*, const char*> kRules[] = {
      {"*.sentence_encoder.embed_tokens", "embeddings.word_embeddings"},
      {"*.sentence_encoder.embed_positions", "embeddings.position_embeddings"},
      {"*.sentence_encoder.layernorm_embedding", "embeddings.LayerNorm"},
      {"*.sentence_encoder.emb_layer_norm", "embeddings.LayerNorm"},
      {"*.sentence_encoder.layers.*.self_attn.q_proj", "encoder.layer.*.attention.self.query"},
      {"*.sentence_encoder.layers.*.self_attn.k_proj", "encoder.layer.*.attention.self.key"},
      {"*.sentence_encoder.layers.*.self_attn.v_proj", "encoder.layer.*.attention.self.value"},
      {"*.sentence_encoder.layers.*.self_attn.out_proj", "encoder.layer.*.attention.output.dense"},
      {"*.sentence_encoder.layers.*.self_attn_layer_norm", "encoder.layer.*.attention.output.LayerNorm"},
      {"*.sentence_encoder.layers.*.fc1", "encoder.layer.*.intermediate.dense"},
      {"*.sentence_encoder.layers.*.fc2", "encoder.layer.*.output.dense"},
      {"*.sentence_encoder.layers.*.final_layer_norm", "encoder.layer.*.output.LayerNorm"},
      {"*.lm_head.dense", "lm_head.dense"},
      {"*.lm_head.layer_norm", "lm_head.layer_norm"},
      {"*.lm_head.bias", "lm_head.bias"},
      {"*.lm_head.weight", "lm_head.decoder.weight"},
  };
  if (!name.starts_with("encoder.") && !name.starts_with("decoder.")) return Renamed{std::string(name), {}};
  for (const auto& [from, to] : kRules)
    // The leading "*" is "encoder" or "decoder"; the native names do not keep it.
    if (auto r = rename_prefix(name, from, std::string("*.") + to))
      return Renamed{r->substr(r->find('.') + 1), {}};
  return Renamed{std::string(name), {}};
}

// fairseq RoBERTa args -> the HF config fields the roberta / fourier-roberta families read;
// the fairseq dictionary has pad = 1, the LayerNorm eps is torch's 1e-5 and there is no
// token-type table (type_vocab_size 1, zeros) and no pooler. Position rows and vocabulary come
// from the tables. HF-named fields already in the config (e.g. --set filter_layers) are kept.
Result<std::string> complete_fairseq_roberta_config(const std::string& config_json,
                                                    const SourceShapes& tensors) {
  nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("config: not a JSON object");
  nlohmann::json out = nlohmann::json::object();
  for (const char* k :
       {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
        "hidden_act", "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "pad_token_id",
        "add_pooling_layer", "mlm_head", "filter_layers", "filter_ratio"})
    if (j.contains(k) && !j[k].is_null()) out[k] = j[k];
  auto copy = [&](const char* from, const char* to) {
    if (!out.contains(to) && j.contains(from) && !j[from].is_null()) out[to] = j[from];
  };
  copy("encoder_embed_dim", "hidden_size");
  copy("encoder_layers", "num_hidden_layers");
  copy("encoder_attention_heads", "num_attention_heads");
  copy("encoder_ffn_embed_dim", "intermediate_size");
  copy("activation_fn", "hidden_act");
  if (!out.contains("layer_norm_eps")) out["layer_norm_eps"] = 1e-5;
  if (!out.contains("pad_token_id")) out["pad_token_id"] = 1;
  if (!out.contains("type_vocab_size")) out["type_vocab_size"] = 1;
  if (const auto* t = shape_of(tensors, "embeddings.word_embeddings.weight");
      t && !t->empty() && !out.contains("vocab_size"))
    out["vocab_size"] = (*t)[0];
  if (const auto* t = shape_of(tensors, "embeddings.position_embeddings.weight");
      t && !t->empty() && !out.contains("max_position_embeddings"))
    out["max_position_embeddings"] = (*t)[0];
  return complete_encoder_config(out.dump(), tensors, "lm_head.");
}

const SourceLayout kFairseqRoberta = [] {
  SourceLayout l{
      "fairseq-roberta",
      {"roberta", "fourier-roberta"},
      "fairseq RoBERTa (--from fairseq: {encoder,decoder}.sentence_encoder.* / lm_head.* renamed to "
      "the HF names; token-type table zeros; classification heads ignored)",
      {},
      {{"classification_heads.", "fine-tuning classification head (not part of the roberta family)"}},
      {},
      {{"lm_head.decoder.weight", "embeddings.word_embeddings.weight"}},
      complete_fairseq_roberta_config};
  l.zeros_if_absent = {"embeddings.token_type_embeddings.weight"};
  l.rename = rename_fairseq_roberta;
  return l;
}();

}  // namespace

const SourceLayout& fairseq_transformer_layout() { return kFairseqTransformer; }
const SourceLayout& fairseq_bart_layout() { return kFairseqBart; }
const SourceLayout& fairseq_lasformer_layout() { return kFairseqLasformer; }
const SourceLayout& fairseq_roberta_layout() { return kFairseqRoberta; }

}  // namespace longrun::convert
