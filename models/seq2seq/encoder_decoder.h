// The generic fairseq/HF encoder-decoder (docs/models.md#fourier-bart base,
// docs/checkpoints.md#source-layouts) that the "bart", "transformer", "fourier-bart" and "lasformer" families
// configure: token embeddings times embed_scale, plus positions (learned with HF's arange + 2, or fairseq
// make_positions learned/sinusoidal), optional layernorm_embedding, post-LN or pre-LN layers
// (seq2seq/layers.h), an optional final layer_norm per side (pre-LN), and the output projection tied or not.
//
// Besides the full forward (Architecture::build), the architecture builds the two graphs
// generation runs (models/generate.cpp):
//   generation encoder: input_ids (+ attention_mask) -> "cross.<i>.key"/"cross.<i>.value"
//                       [B, H, Ns, hd] for every decoder layer (the encoder runs once and
//                       cross-attention K/V are projected once);
//   decoder step:       one new token per row against a KV cache of capacity S (see
//                       DecoderStepInputs) -> "logits" [R, 1, V] and the updated caches
//                       "present.<i>.key"/"present.<i>.value" [R, H, S, hd].
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/architecture.h"
#include "seq2seq/key_selection.h"
#include "seq2seq/layers.h"

namespace longrun::models {

enum class PositionKind : uint8_t {
  learned_arange,      // HF BartLearnedPositionalEmbedding: row = 2 + index (padding ignored)
  learned_fairseq,     // fairseq LearnedPositionalEmbedding: row = make_positions(ids)
  sinusoidal_fairseq,  // fairseq SinusoidalPositionalEmbedding: row = make_positions(ids)
};

// Everything that differs between the families, filled by their config parsers.
struct Seq2SeqSpec {
  std::string arch;
  std::string config_json;  // the parsed config, re-serialised with every field
  // Parameter prefixes (without ".weight"): "model.shared" for all three in BART; fairseq
  // "encoder.embed_tokens" / "decoder.embed_tokens" / "decoder.output_projection" unless
  // shared. "<root>encoder." / "<root>decoder." hold positions, layers and norms.
  std::string root;
  std::string encoder_tokens, decoder_tokens, output_projection;
  bool final_logits_bias = false;  // HF BartForConditionalGeneration "final_logits_bias" [1, V]
  int64_t src_vocab = 0, tgt_vocab = 0;
  int64_t dim = 0;
  int64_t encoder_layers = 0, decoder_layers = 0;
  LayerShape encoder, decoder;
  bool layernorm_embedding = false;
  double embed_scale = 1.0;
  PositionKind positions = PositionKind::learned_arange;
  int64_t max_source_positions = 0, max_target_positions = 0;
  // fairseq: the padding masks and positions come from ids == pad (no attention_mask input),
  // and the encoder zeroes pad rows after the embeddings. HF: from the attention_mask input.
  bool padding_from_tokens = false;
  int64_t pad = 1, eos = 2, decoder_start = 2;
  // Fourier-BART (docs/models.md#fourier-bart): encoder layers whose input goes through the spectral
  // filter (M = ceil(T * ratio) of the current length T, all tokens), the padding mask
  // dropped from the first filter layer on and for cross-attention, and the global residual
  // (every pre-filter input and the last layer's pre-LN sum, upsampled to the input length)
  // before the last encoder LayerNorm. Post-LN only. The steps are common/fourier_filter.h.
  std::vector<int64_t> filter_layers;
  double filter_ratio = 0.0;
  // Lasformer (docs/models.md#lasformer): top-k key selection in every attention, one selection per group
  // of selection.group_size layers (seq2seq/key_selection.h); generation caches the selection keys.
  SelectionSpec selection;
};

// What generation needs to know (models/generate.cpp).
struct GenerationSpec {
  int64_t tgt_vocab = 0;
  int64_t pad = 1, eos = 2, decoder_start = 2;
  int64_t decoder_layers = 0, heads = 1, head_dim = 1;
  int64_t position_offset = 2;       // the step's position row = offset + step index
  int64_t max_decoder_length = 0;    // decoder positions available (tokens incl. the start token)
  bool padding_from_tokens = false;  // else the source mask is the attention_mask input
  bool source_unmasked = false;      // cross-attention masks nothing (Fourier-BART)
  // Lasformer: decoder selection groups and their key width ds. The generation encoder then
  // also outputs "cross_select.<g>.key" [B, 1, Ns, ds], and the step takes
  // "past_select.<g>.key"/"cross_select.<g>.key" and outputs "present_select.<g>.key"
  // [R, 1, S, ds] after the per-layer caches (cached and reordered like them).
  int64_t selection_groups = 0, selection_dim = 0;
};

class Seq2SeqArchitecture : public Architecture {
 public:
  virtual GenerationSpec generation_spec() const = 0;
  // Inputs "input_ids" (+ "attention_mask" unless padding_from_tokens).
  virtual void build_generation_encoder(GraphContext& c) const = 0;
  // Inputs: "decoder_input_ids" i64 [R, 1], "decoder_position" i64 [1], "write_slot" u8
  // [1, 1, S, 1], "slot_mask" u8 [R, S], "encoder_mask" u8 [R, Ns], and per decoder layer i
  // "past.<i>.key"/"past.<i>.value" f32 [R, H, S, hd], "cross.<i>.key"/"cross.<i>.value"
  // f32 [R, H, Ns, hd] (+ GenerationSpec's selection caches).
  virtual void build_decoder_step(GraphContext& c) const = 0;
};

Result<std::unique_ptr<Architecture>> make_encoder_decoder(Seq2SeqSpec spec);

}  // namespace longrun::models
