// Config parsers of the two base encoder-decoder families (rows of models/registry.cpp). Both
// build a seq2seq/encoder_decoder.h architecture; they differ in names, positions and padding
// rules. Their field readers are shared with the families built on them: "fourier-bart"
// (fourier/fourier_bart.h) on "bart", "lasformer" (lasformer/lasformer.h) on "transformer".
//
// "bart" (bart.cpp): HF BartForConditionalGeneration. longrun.config = the HF config.json
//   fields: vocab_size, d_model, encoder_layers, decoder_layers, encoder_attention_heads,
//   decoder_attention_heads, encoder_ffn_dim, decoder_ffn_dim, max_position_embeddings
//   (required); activation_function ("gelu" | "relu" | "gelu_new", default "gelu"),
//   scale_embedding (false), pad_token_id (1), eos_token_id (2), decoder_start_token_id (2);
//   bos_token_id, dropouts, layerdrops, init_std, use_cache, generation defaults (num_beams,
//   max_length, ...), ... accepted and ignored; normalize_before, add_final_layer_norm,
//   static_position_embeddings, add_bias_logits (false) and normalize_embedding (true) are
//   accepted at their BART values only (unsupported otherwise).
//   Parameters (HF names; fairseq bart.* keys map 1:1 below "model.", docs/models.md#bart):
//     model.shared.weight [V, D]           token table of encoder, decoder and lm_head (tied)
//     model.{encoder,decoder}.embed_positions.weight [max_position_embeddings + 2, D]
//     model.{encoder,decoder}.layernorm_embedding.{weight,bias}
//     model.encoder.layers.{i}.{self_attn.{q,k,v,out}_proj, self_attn_layer_norm, fc1, fc2,
//                               final_layer_norm}.{weight,bias}
//     model.decoder.layers.{i}.{... as encoder ..., encoder_attn.{q,k,v,out}_proj,
//                               encoder_attn_layer_norm}.{weight,bias}
//     final_logits_bias [1, V]
//   (model.encoder.embed_tokens / model.decoder.embed_tokens / lm_head.weight are the tied
//   copies of model.shared.weight and are not stored.) Positions: HF arange + 2, whatever
//   the padding (fairseq's make_positions agrees on right-padded batches); masks from the
//   attention_mask input.
//
// "transformer" (transformer.cpp): fairseq Transformer (transformer_base / _big and the
//   Lasformer base). longrun.config = fairseq args names: encoder_embed_dim,
//   encoder_ffn_embed_dim, encoder_layers, encoder_attention_heads, decoder_ffn_embed_dim,
//   decoder_layers, decoder_attention_heads, src_vocab_size, tgt_vocab_size (required; the
//   dictionary sizes); decoder_embed_dim (= encoder_embed_dim), encoder/decoder_normalize_before
//   (false), encoder/decoder_learned_pos (false: sinusoidal; both sides alike),
//   layernorm_embedding (false), no_scale_embedding (false: scale sqrt(D)), activation_fn
//   ("relu" | "gelu" | "gelu_accurate"), share_all_embeddings, share_decoder_input_output_embed
//   (false), max_source_positions, max_target_positions (1024), pad (1), eos (2).
//   Parameters (fairseq names):
//     encoder.embed_tokens.weight [V_src, D]
//     decoder.embed_tokens.weight [V_tgt, D]           absent with share_all_embeddings
//     decoder.output_projection.weight [V_tgt, D]      absent when shared with the decoder table
//     {encoder,decoder}.embed_positions.weight [max_*_positions + pad + 1, D]  learned only
//     {encoder,decoder}.layernorm_embedding.*          with layernorm_embedding
//     {encoder,decoder}.layers.{i}.*                   as BART above, without "model."
//     {encoder,decoder}.layer_norm.*                   with *_normalize_before
//   (encoder.version, decoder.version and *._float_tensor are dropped by the converter.)
//   Positions: fairseq make_positions (pad-aware), masks from ids == pad, no attention_mask.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/architecture.h"
#include "common/config.h"
#include "seq2seq/encoder_decoder.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_bart_config(std::string_view config_json);
Result<std::unique_ptr<Architecture>> parse_transformer_config(std::string_view config_json);

// Every "bart" / "transformer" field above, read from r (r.finish() left to the caller, who
// may read its own fields first) into a spec for `arch`; *config gets them re-serialised.
// The "bart" reader sets HF positions and padding (learned_arange, attention_mask input).
Result<Seq2SeqSpec> read_bart_fields(ConfigReader& r, const std::string& arch, nlohmann::json* config);
Result<Seq2SeqSpec> read_transformer_fields(ConfigReader& r, const std::string& arch, nlohmann::json* config);

}  // namespace longrun::models
