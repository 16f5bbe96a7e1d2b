// arch "bart": HF BartForConditionalGeneration names and semantics (seq2seq/families.h). The
// field reader is shared with "fourier-bart" (fourier/fourier_bart.cpp).
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/config.h"
#include "seq2seq/encoder_decoder.h"
#include "seq2seq/families.h"

namespace longrun::models {

Result<Seq2SeqSpec> read_bart_fields(ConfigReader& r, const std::string& arch, nlohmann::json* config) {
  const std::string what = arch + " config";
  constexpr int64_t kMaxDim = int64_t(1) << 20;
  Seq2SeqSpec s;
  s.arch = arch;
  LR_ASSIGN_OR_RETURN(s.src_vocab, r.integer("vocab_size", 1, int64_t(1) << 24));
  s.tgt_vocab = s.src_vocab;
  LR_ASSIGN_OR_RETURN(s.dim, r.integer("d_model", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(s.encoder_layers, r.integer("encoder_layers", 0, 1024));
  LR_ASSIGN_OR_RETURN(s.decoder_layers, r.integer("decoder_layers", 0, 1024));
  LR_ASSIGN_OR_RETURN(s.encoder.heads, r.integer("encoder_attention_heads", 1, 4096));
  LR_ASSIGN_OR_RETURN(s.decoder.heads, r.integer("decoder_attention_heads", 1, 4096));
  LR_ASSIGN_OR_RETURN(s.encoder.ffn, r.integer("encoder_ffn_dim", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(s.decoder.ffn, r.integer("decoder_ffn_dim", 1, kMaxDim));
  for (const char* k : {"encoder_attention_heads", "decoder_attention_heads"}) {
    const int64_t h = k[0] == 'e' ? s.encoder.heads : s.decoder.heads;
    if (s.dim % h != 0)
      return r.error(k, "d_model " + std::to_string(s.dim) + " is not a multiple of " + std::to_string(h));
  }
  LR_ASSIGN_OR_RETURN(s.max_source_positions, r.integer("max_position_embeddings", 1, int64_t(1) << 24));
  s.max_target_positions = s.max_source_positions;
  LR_ASSIGN_OR_RETURN(const std::string act, r.string_or("activation_function", "gelu"));
  Activation a = Activation::gelu;
  if (act == "relu")
    a = Activation::relu;
  else if (act == "gelu_new")
    a = Activation::gelu_tanh;
  else if (act != "gelu")
    return unsupported(
        what + ": field 'activation_function': expected \"gelu\", \"relu\" or \"gelu_new\", found \"" + act +
        "\"");
  s.encoder.activation = s.decoder.activation = a;
  s.encoder.dim = s.decoder.dim = s.dim;
  LR_ASSIGN_OR_RETURN(const bool scale, r.boolean_or("scale_embedding", false));
  s.embed_scale = scale ? std::sqrt(double(s.dim)) : 1.0;
  LR_ASSIGN_OR_RETURN(s.pad, r.integer_or("pad_token_id", 1, 0, s.src_vocab - 1));
  LR_ASSIGN_OR_RETURN(s.eos, r.integer_or("eos_token_id", 2, 0, s.src_vocab - 1));
  LR_ASSIGN_OR_RETURN(s.decoder_start, r.integer_or("decoder_start_token_id", 2, 0, s.src_vocab - 1));
  LR_ASSIGN_OR_RETURN(const bool tied, r.boolean_or("tie_word_embeddings", true));
  if (!tied)
    return unsupported(what + ": field 'tie_word_embeddings': only the tied lm_head (true) is implemented");
  // Older HF BART configs carry switches for mBART-style variants: accept the BART values only.
  struct Switch {
    const char* key;
    bool bart_value;
  };
  for (const Switch sw : {Switch{"normalize_before", false}, Switch{"add_final_layer_norm", false},
                          Switch{"normalize_embedding", true}, Switch{"static_position_embeddings", false},
                          Switch{"add_bias_logits", false}}) {
    LR_ASSIGN_OR_RETURN(const bool v, r.boolean_or(sw.key, sw.bart_value));
    if (v != sw.bart_value)
      return unsupported(what + ": field '" + sw.key + "': only " + (sw.bart_value ? "true" : "false") +
                         " (BART) is implemented");
  }
  for (const char* k : {"bos_token_id",
                        "dropout",
                        "attention_dropout",
                        "activation_dropout",
                        "classifier_dropout",
                        "init_std",
                        "encoder_layerdrop",
                        "decoder_layerdrop",
                        "use_cache",
                        "num_labels",
                        "is_encoder_decoder",
                        "forced_bos_token_id",
                        "forced_eos_token_id",
                        "model_type",
                        "architectures",
                        "torch_dtype",
                        "transformers_version",
                        "num_hidden_layers",
                        "classif_dropout",
                        "extra_pos_embeddings",
                        "output_past",
                        "gradient_checkpointing",
                        "id2label",
                        "label2id",
                        "task_specific_params",
                        "prefix",
                        "_name_or_path",
                        "num_beams",
                        "max_length",
                        "min_length",
                        "no_repeat_ngram_size",
                        "length_penalty",
                        "early_stopping"})
    r.ignore(k);

  s.root = "model.";
  s.encoder_tokens = s.decoder_tokens = s.output_projection = "model.shared";
  s.final_logits_bias = true;
  s.layernorm_embedding = true;
  s.positions = PositionKind::learned_arange;
  s.padding_from_tokens = false;
  *config = nlohmann::json{{"vocab_size", s.src_vocab},
                           {"d_model", s.dim},
                           {"encoder_layers", s.encoder_layers},
                           {"decoder_layers", s.decoder_layers},
                           {"encoder_attention_heads", s.encoder.heads},
                           {"decoder_attention_heads", s.decoder.heads},
                           {"encoder_ffn_dim", s.encoder.ffn},
                           {"decoder_ffn_dim", s.decoder.ffn},
                           {"max_position_embeddings", s.max_source_positions},
                           {"activation_function", act},
                           {"scale_embedding", scale},
                           {"pad_token_id", s.pad},
                           {"eos_token_id", s.eos},
                           {"decoder_start_token_id", s.decoder_start}};
  return s;
}

Result<std::unique_ptr<Architecture>> parse_bart_config(std::string_view config_json) {
  LR_ASSIGN_OR_RETURN(ConfigReader r, ConfigReader::parse(config_json, "bart config"));
  nlohmann::json j;
  LR_ASSIGN_OR_RETURN(Seq2SeqSpec s, read_bart_fields(r, "bart", &j));
  LR_RETURN_IF_ERROR(r.finish());
  s.config_json = j.dump();
  return make_encoder_decoder(std::move(s));
}

}  // namespace longrun::models
