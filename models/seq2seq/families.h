// Config parsers of the encoder-decoder families (rows of models/registry.cpp). Both build a
// seq2seq/encoder_decoder.h architecture; they differ in names, positions and padding rules.
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
//   Parameters (HF names; fairseq bart.* keys map 1:1 below "model.", MODELS.md §1.6):
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
// "fourier-bart" (bart.cpp): Fourier-BART (MODELS.md §1.3; LUMIA-Group/FourierTransformer
//   Summarization, fairseq bart_large_dct). The "bart" config fields and parameter names, plus
//   dct_layers (list of encoder layers, required), dct_percentage (r in (0, 1], required with
//   filters), global_residual (true; false is rejected with filters: the official decoder
//   asserts), dct_lowpass (true). fairseq semantics: make_positions (pad-aware, same table
//   shape), padding from ids == pad (no attention_mask input), pad rows zeroed after the
//   embeddings; at a filter layer the input (all positions, pads included) is filtered to
//   M = ceil(T r) before the standard layer, the key mask is dropped from the first filter
//   on and cross-attention masks nothing; the last layer adds every pre-filter input and its
//   own pre-LN sum, nearest-upsampled to the input length, before its final LayerNorm. Debug
//   adds debug.encoder.layer<i>.filtered. The official fp16 rounding of the filter output
//   (MODELS.md §1.7) is not reproduced.
// "lasformer" (transformer.cpp): Lasformer (MODELS.md §4) = the "transformer" family (fields,
//   names, semantics) with top-k key selection in encoder self-, decoder self- and cross-
//   attention (seq2seq/selection.h), plus the fields selection_group_size (r, 3),
//   selection_dim (ds, 64), selection_ratio (rho in (0, 1], 0.05), selection_min_keys
//   (k_min, 10), selection_bias (false). Extra parameters at the lowest layer i of every
//   group (i % r == 0), per attention a in {encoder.layers.{i}.self_attn,
//   decoder.layers.{i}.self_attn, decoder.layers.{i}.encoder_attn}:
//     a.select_q.weight [ds, D]  a.select_k.weight [ds, D]  (+ .bias [ds] with selection_bias)
//   rho is a config field (one for all groups), not a tensor: k sets the graph's shapes.
//   Generation: the step's query selects among the cached selection keys of its group
//   (GenerationSpec: past_select / cross_select caches), as row t of the full forward.
#pragma once

#include <memory>
#include <string_view>

#include "common/architecture.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_bart_config(std::string_view config_json);
Result<std::unique_ptr<Architecture>> parse_transformer_config(std::string_view config_json);
Result<std::unique_ptr<Architecture>> parse_fourier_bart_config(std::string_view config_json);
Result<std::unique_ptr<Architecture>> parse_lasformer_config(std::string_view config_json);

}  // namespace longrun::models
