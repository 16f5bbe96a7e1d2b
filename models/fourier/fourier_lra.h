// Fourier Transformer, LRA encoder-only classifier: arch "fourier-lra" (docs/models.md#lra-encoder; the
// official LUMIA-Group/FourierTransformer LRA/code model). filter_layers = [] is the vanilla
// softmax-attention baseline of the same code.
//
// longrun.config fields (the official lra_config names, plus the filter settings):
//   vocab_size              V; the CLS id is V - 1                         (required)
//   transformer_dim         D                                               (required)
//   transformer_hidden_dim  F: FFN width and classifier hidden width        (required)
//   num_head, head_dim      H and hd (H * hd need not equal D); head_dim defaults to D / H
//   num_layers              L                                               (required)
//   max_seq_len             longest input N; the position table has 2^ceil(log2 max_seq_len)
//                           rows, as the official run_tasks.py rounds it    (required)
//   num_classes             C                                               (required)
//   filter_layers           layer indices with the DCT filter, e.g. [0]; [] = vanilla (required)
//   filter_ratio            r in (0, 1], M = ceil(T * r) in double  (required with filters)
//   pooling_mode            "CLS" (the only one the official scripts use)   (default "CLS")
//   embedding_dim           must equal transformer_dim when present
//   dual                    ModelForSCDual, the Retrieval task's two-input classifier  (default false)
//   dropout_prob, attention_dropout, attention_grad_checkpointing, mixed_precision,
//   learn_pos_emb, tied_weights, attn_type: training-only, accepted and ignored
//
// Inputs: input_ids i32/i64 [B, N] (1 <= N <= max_seq_len; N >= 2 with filter layers),
// optional attention_mask u8/i32/i64/f32 [B, N] of 0/1 (absent = all ones).
// Outputs: last_hidden_state f32 [B, T', D] (T' = N, or 1 + M of the last filter layer),
// pooled f32 [B, D] (= last_hidden_state[:, 0], the CLS position), logits f32 [B, C].
// Debug outputs: debug.embeddings, debug.layer<i>.filtered (filter layers: the filtered,
// normalised S), debug.layer<i>.output.
// With dual: inputs input_ids_0 / attention_mask_0 and input_ids_1 / attention_mask_1 (same B,
// each N as above), the one encoder over each; outputs last_hidden_state_0,
// last_hidden_state_1 and logits = Linear -> ReLU -> Linear of [p0, p1, p0 * p1, p0 - p1] (p =
// the CLS row of each); the classifier's first Linear is [F, 4 D]; debug outputs carry the
// suffix _0 / _1.
#pragma once

#include <memory>
#include <string_view>

#include "common/architecture.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_fourier_lra_config(std::string_view config_json);

}  // namespace longrun::models
