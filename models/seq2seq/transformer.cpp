// arch "transformer": fairseq Transformer encoder-decoder names and semantics
// (seq2seq/families.h; docs/checkpoints.md#fairseq-checkpoints). Its field reader is Lasformer's base too.
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/config.h"
#include "seq2seq/encoder_decoder.h"
#include "seq2seq/families.h"

namespace longrun::models {

Result<Seq2SeqSpec> read_transformer_fields(ConfigReader& r, const std::string& arch,
                                            nlohmann::json* config) {
  const std::string what = arch + " config";
  constexpr int64_t kMaxDim = int64_t(1) << 20;
  Seq2SeqSpec s;
  s.arch = arch;
  LR_ASSIGN_OR_RETURN(s.src_vocab, r.integer("src_vocab_size", 1, int64_t(1) << 24));
  LR_ASSIGN_OR_RETURN(s.tgt_vocab, r.integer("tgt_vocab_size", 1, int64_t(1) << 24));
  LR_ASSIGN_OR_RETURN(s.dim, r.integer("encoder_embed_dim", 4, kMaxDim));
  LR_ASSIGN_OR_RETURN(const int64_t dec_dim, r.integer_or("decoder_embed_dim", s.dim, 1, kMaxDim));
  if (dec_dim != s.dim)
    return unsupported(what + ": field 'decoder_embed_dim': must equal encoder_embed_dim " +
                       std::to_string(s.dim) + ", found " + std::to_string(dec_dim));
  LR_ASSIGN_OR_RETURN(s.encoder.ffn, r.integer("encoder_ffn_embed_dim", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(s.decoder.ffn, r.integer("decoder_ffn_embed_dim", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(s.encoder_layers, r.integer("encoder_layers", 0, 1024));
  LR_ASSIGN_OR_RETURN(s.decoder_layers, r.integer("decoder_layers", 0, 1024));
  LR_ASSIGN_OR_RETURN(s.encoder.heads, r.integer("encoder_attention_heads", 1, 4096));
  LR_ASSIGN_OR_RETURN(s.decoder.heads, r.integer("decoder_attention_heads", 1, 4096));
  for (const char* k : {"encoder_attention_heads", "decoder_attention_heads"}) {
    const int64_t h = k[0] == 'e' ? s.encoder.heads : s.decoder.heads;
    if (s.dim % h != 0)
      return r.error(
          k, "encoder_embed_dim " + std::to_string(s.dim) + " is not a multiple of " + std::to_string(h));
  }
  s.encoder.dim = s.decoder.dim = s.dim;
  LR_ASSIGN_OR_RETURN(s.encoder.normalize_before, r.boolean_or("encoder_normalize_before", false));
  LR_ASSIGN_OR_RETURN(s.decoder.normalize_before, r.boolean_or("decoder_normalize_before", false));
  LR_ASSIGN_OR_RETURN(const bool enc_learned, r.boolean_or("encoder_learned_pos", false));
  LR_ASSIGN_OR_RETURN(const bool dec_learned, r.boolean_or("decoder_learned_pos", false));
  if (enc_learned != dec_learned)
    return unsupported(what + ": field 'decoder_learned_pos': must equal encoder_learned_pos");
  LR_ASSIGN_OR_RETURN(s.layernorm_embedding, r.boolean_or("layernorm_embedding", false));
  LR_ASSIGN_OR_RETURN(const bool no_scale, r.boolean_or("no_scale_embedding", false));
  s.embed_scale = no_scale ? 1.0 : std::sqrt(double(s.dim));
  LR_ASSIGN_OR_RETURN(const std::string act, r.string_or("activation_fn", "relu"));
  Activation a = Activation::relu;
  if (act == "gelu")
    a = Activation::gelu;
  else if (act == "gelu_accurate")
    a = Activation::gelu_tanh;
  else if (act != "relu")
    return unsupported(what +
                       ": field 'activation_fn': expected \"relu\", \"gelu\" or \"gelu_accurate\", found "
                       "\"" +
                       act + "\"");
  s.encoder.activation = s.decoder.activation = a;
  LR_ASSIGN_OR_RETURN(const bool share_all, r.boolean_or("share_all_embeddings", false));
  LR_ASSIGN_OR_RETURN(const bool share_io, r.boolean_or("share_decoder_input_output_embed", false));
  if (share_all && s.src_vocab != s.tgt_vocab)
    return r.error("share_all_embeddings", "needs src_vocab_size == tgt_vocab_size, found " +
                                               std::to_string(s.src_vocab) + " and " +
                                               std::to_string(s.tgt_vocab));
  LR_ASSIGN_OR_RETURN(s.max_source_positions,
                      r.integer_or("max_source_positions", 1024, 1, int64_t(1) << 24));
  LR_ASSIGN_OR_RETURN(s.max_target_positions,
                      r.integer_or("max_target_positions", 1024, 1, int64_t(1) << 24));
  const int64_t min_vocab = std::min(s.src_vocab, s.tgt_vocab);
  LR_ASSIGN_OR_RETURN(s.pad, r.integer_or("pad", 1, 0, min_vocab - 1));
  LR_ASSIGN_OR_RETURN(s.eos, r.integer_or("eos", 2, 0, s.tgt_vocab - 1));
  s.decoder_start = s.eos;  // fairseq starts the target with eos
  for (const char* k :
       {"arch", "dropout", "attention_dropout", "activation_dropout", "relu_dropout", "encoder_layerdrop",
        "decoder_layerdrop", "adaptive_input", "bos", "unk", "label_smoothing"})
    r.ignore(k);
  s.root = "";
  s.encoder_tokens = "encoder.embed_tokens";
  s.decoder_tokens = share_all ? s.encoder_tokens : "decoder.embed_tokens";
  s.output_projection = share_all || share_io ? s.decoder_tokens : "decoder.output_projection";
  s.positions = enc_learned ? PositionKind::learned_fairseq : PositionKind::sinusoidal_fairseq;
  s.padding_from_tokens = true;
  *config = nlohmann::json{{"src_vocab_size", s.src_vocab},
                           {"tgt_vocab_size", s.tgt_vocab},
                           {"encoder_embed_dim", s.dim},
                           {"decoder_embed_dim", s.dim},
                           {"encoder_ffn_embed_dim", s.encoder.ffn},
                           {"decoder_ffn_embed_dim", s.decoder.ffn},
                           {"encoder_layers", s.encoder_layers},
                           {"decoder_layers", s.decoder_layers},
                           {"encoder_attention_heads", s.encoder.heads},
                           {"decoder_attention_heads", s.decoder.heads},
                           {"encoder_normalize_before", s.encoder.normalize_before},
                           {"decoder_normalize_before", s.decoder.normalize_before},
                           {"encoder_learned_pos", enc_learned},
                           {"decoder_learned_pos", dec_learned},
                           {"layernorm_embedding", s.layernorm_embedding},
                           {"no_scale_embedding", no_scale},
                           {"activation_fn", act},
                           {"share_all_embeddings", share_all},
                           {"share_decoder_input_output_embed", share_io},
                           {"max_source_positions", s.max_source_positions},
                           {"max_target_positions", s.max_target_positions},
                           {"pad", s.pad},
                           {"eos", s.eos}};
  return s;
}

Result<std::unique_ptr<Architecture>> parse_transformer_config(std::string_view config_json) {
  LR_ASSIGN_OR_RETURN(ConfigReader r, ConfigReader::parse(config_json, "transformer config"));
  nlohmann::json j;
  LR_ASSIGN_OR_RETURN(Seq2SeqSpec s, read_transformer_fields(r, "transformer", &j));
  LR_RETURN_IF_ERROR(r.finish());
  s.config_json = j.dump();
  return make_encoder_decoder(std::move(s));
}

}  // namespace longrun::models
