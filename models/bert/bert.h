// BERT-style post-LN encoders: arches "bert" (HF BertModel), "roberta" (HF RobertaModel),
// "fourier-bert" and "fourier-roberta" (the same encoders with the Fourier Transformer's
// spectral filter before chosen layers, docs/models.md#fourier-bert-and-fourier-roberta).
//
// longrun.config fields (HF config.json names; `architectures`, `model_type`, dropout and
// other training-only keys are accepted and ignored):
//   vocab_size, hidden_size (D), num_hidden_layers (L), num_attention_heads (H, D % H == 0),
//   intermediate_size (F)                                                     (required)
//   hidden_act          "gelu" (erf) | "gelu_new" / "gelu_pytorch_tanh" (tanh) | "relu"
//                       (default "gelu")
//   max_position_embeddings  P, rows of the position table (default 512)
//   type_vocab_size     rows of the token-type table (default 2 bert, 1 roberta)
//   layer_norm_eps      (default 1e-12)
//   pad_token_id        (default 0 bert, 1 roberta; roberta positions depend on it)
//   position_embedding_type  only "absolute";  is_decoder / add_cross_attention only false
//   add_pooling_layer   pooler + output "pooled" (default true)           [longrun key]
//   mlm_head            masked-LM head + output "logits" (default false)   [longrun key]
//   filter_layers       fourier-*: layer indices with a filter in front (required there)
//   filter_ratio        fourier-*: r in (0, 1] (required when filter_layers is not empty)
//
// Canonical tensor names (HF base-model state_dict names, i.e. without the "bert." /
// "roberta." prefix that HF *For* heads add):
//   embeddings.word_embeddings.weight [V, D]      embeddings.position_embeddings.weight [P, D]
//   embeddings.token_type_embeddings.weight [T, D]  embeddings.LayerNorm.{weight,bias}
//   encoder.layer.{i}.attention.self.{query,key,value}.{weight [D, D], bias}
//   encoder.layer.{i}.attention.output.dense.*,  encoder.layer.{i}.attention.output.LayerNorm.*
//   encoder.layer.{i}.intermediate.dense.{weight [F, D], bias}
//   encoder.layer.{i}.output.dense.{weight [D, F], bias},  encoder.layer.{i}.output.LayerNorm.*
//   pooler.dense.*                                            (add_pooling_layer)
//   bert MLM:    cls.predictions.transform.dense.*, cls.predictions.transform.LayerNorm.*,
//                cls.predictions.bias [V]   (decoder weight tied to word_embeddings: not stored)
//   roberta MLM: lm_head.dense.*, lm_head.layer_norm.*, lm_head.bias [V]   (decoder tied)
//
// Forward (HF semantics):
//   positions   bert: 0 .. N-1;  roberta: cumsum(ids != pad) * (ids != pad) + pad (in-graph
//               with the cumsum op, exact for any padding layout; first real token -> row
//               pad + 1; no N-dependent constant)
//   X = LN_emb(E_word[ids] + E_pos[positions] + E_type[token_type_ids or 0])
//   per layer: X = LN_attn(X + Wo MHA(X, key padding mask)); X = LN_out(X + FFN_act(X))
//   pooled = tanh(pooler.dense(X[:, 0]));  bert logits = E_word · LN(act(dense(X)))ᵀ + bias;
//   roberta logits = E_word · LN(gelu(dense(X)))ᵀ + bias
//
// Fourier variants (docs/models.md#fourier-bart encoder semantics, CLS kept out as its roberta branch):
//   before layer i in filter_layers: with T' the current length (CLS included),
//   M = min(ceil(T' * r) in double, T' - 1), X = [X[:, :1], IDCT_M(DCT_{T'-1}(X[:, 1:])[:M])];
//   the layer then runs unchanged on the shorter X. The key padding mask is used only by the
//   layers before the first filter layer (docs/models.md#fourier-bart: key_padding_mask = None from
//   idx >= min(dct_layers)); pad tokens take part in the DCT
//   (docs/models.md#fourier-bert-and-fourier-roberta). Choices the official code leaves open: M counts the
//   CLS slot (as the LRA code, docs/models.md#lra-encoder); no global residual (the BART encoder needs it
//   only for cross-attention), so last_hidden_state/logits have 1 + M rows of the last filter; pad embeddings
//   are not zeroed (HF BERT/RoBERTa do not), so filter_layers = [] is exactly bert / roberta.
//
// Inputs: input_ids i32/i64 [B, N] (N <= P for bert, P - pad_token_id - 1 for roberta; N >= 2
// with filters), optional attention_mask u8/i32/i64/f32 [B, N] (0/1; a row of all zeros gives
// zeros from attention where HF would attend uniformly), optional token_type_ids i32/i64
// [B, N] (default zeros; ids >= type_vocab_size are an out_of_range error at run time).
// Outputs: last_hidden_state [B, T', D], pooled [B, D] (add_pooling_layer), logits [B, T', V]
// (mlm_head). Debug: debug.embeddings, debug.layer<i>.filtered, debug.layer<i>.output.
#pragma once

#include <memory>
#include <string_view>

#include "common/architecture.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_bert_config(std::string_view config_json);
Result<std::unique_ptr<Architecture>> parse_roberta_config(std::string_view config_json);
Result<std::unique_ptr<Architecture>> parse_fourier_bert_config(std::string_view config_json);
Result<std::unique_ptr<Architecture>> parse_fourier_roberta_config(std::string_view config_json);

}  // namespace longrun::models
