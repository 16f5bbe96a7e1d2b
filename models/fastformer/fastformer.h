// Fastformer (Wu et al. 2021), text classifier: arch "fastformer" (docs/models.md#fastformer; the
// official wuch15/Fastformer notebook, Fastformer.ipynb: FastSelfAttention with query = value
// sharing, BERT-style post-LN sublayers, the additive-attention "weightpooler" and the
// dense_linear head).
//
// longrun.config fields (the official fastformer.json / BertConfig names):
//   vocab_size               V (word_embedding rows; id 0 is padding)            (required)
//   hidden_size              D                                                   (required)
//   num_attention_heads      H; D must be a multiple of H, hd = D / H            (required)
//   num_hidden_layers        L                                                   (required)
//   intermediate_size        F: the FFN width                                    (required)
//   max_position_embeddings  rows of the position table = longest input N        (required)
//   num_labels               C: dense_linear outputs (the notebook uses 4)       (required)
//   layer_norm_eps           every LayerNorm's eps                       (default 1e-12)
//   hidden_act               "gelu" (exact erf), the only one the official config uses
//   pooler_type              "weightpooler" (AttentionPooling), the only one implemented
//   share_layers             layer-wise weight sharing (the paper's recommended setting;
//                            not in the official code): one weight set "encoders.0.*" run
//                            L times                                     (default false)
//   hidden_dropout_prob, attention_probs_dropout_prob, initializer_range, type_vocab_size:
//   training-only, accepted and ignored
//
// Inputs: input_ids i32/i64 [B, N] (1 <= N <= max_position_embeddings), optional
// attention_mask u8/i32/i64/f32 [B, N] of 0/1. Absent mask = (input_ids != 0), as the
// official Model derives it (padding_idx 0).
// Outputs: last_hidden_state f32 [B, N, D] (the last layer; pad rows are computed too),
// pooled f32 [B, D] (the additive attention pooler), logits f32 [B, C].
// Debug outputs: debug.embeddings (after the embedding LayerNorm), debug.layer<i>.attention
// (FastSelfAttention's output: transform(u) + Q), debug.layer<i>.output (all but the last
// layer, whose output is last_hidden_state).
#pragma once

#include <memory>
#include <string_view>

#include "common/architecture.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_fastformer_config(std::string_view config_json);

}  // namespace longrun::models
