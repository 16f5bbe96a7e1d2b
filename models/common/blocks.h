// Common transformer blocks, shared by every family (fourier, bert/roberta/bart/transformer,
// fastformer, combiner, lasformer). Each reads its parameters by the PyTorch module prefix
// the family's parameter table used (weights.h), names its nodes after that prefix (so a
// run-time error or a profile line says "model.transformer_0.mha.W_q"), and reports shape
// problems through the builder's sticky error.
//
// Layout conventions: activations are f32 [B, N, D]; attention heads are [B, H, N, hd] with
// the head-major split of PyTorch's x.reshape(B, N, H, hd).transpose(1, 2).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "common/architecture.h"
#include "longrun/ops/attrs.h"

namespace longrun::models {

// --- layout helpers ---------------------------------------------------------------------
ValueId reshape(GraphContext& c, ValueId x, std::initializer_list<int64_t> dims);
ValueId transpose(GraphContext& c, ValueId x, std::initializer_list<int> perm);
// x[..., start:end, ...] along `axis` (Python slice clamping).
ValueId slice(GraphContext& c, ValueId x, int axis, int64_t start, int64_t end);

// --- dense blocks -----------------------------------------------------------------------
// nn.Linear at `prefix`: y = act(x W^T + b), W [out, in] from "<prefix>.weight", b [out] from
// "<prefix>.bias" (unless bias = false). x [..., in] -> [..., out]. The activation runs as the
// matmul's epilogue.
ValueId linear(GraphContext& c, ValueId x, const std::string& prefix, Activation act = Activation::none,
               bool bias = true);
// nn.LayerNorm at `prefix` over the last axis.
ValueId layer_norm(GraphContext& c, ValueId x, const std::string& prefix, float eps);
// Position-wise feed-forward: fc2(act(fc1(x))), e.g. BERT intermediate/output, the LRA
// mlpblock.0 / mlpblock.3 (act = gelu: exact erf), the LRA classifier head (act = relu).
ValueId feed_forward(GraphContext& c, ValueId x, const std::string& fc1, const std::string& fc2,
                     Activation act);

// --- attention --------------------------------------------------------------------------
struct AttentionSpec {
  std::string q, k, v, out;  // nn.Linear prefixes of the projections
  int64_t heads = 1;
  int64_t head_dim = 1;  // H * head_dim need not equal D
  float scale = 1.0f;    // logits = q k^T * scale (usually 1 / sqrt(head_dim))
  bool causal = false;
  std::string name;  // node-name prefix of the attention core
};
// [B, N, H*hd] -> [B, H, N, hd] and back.
ValueId split_heads(GraphContext& c, ValueId x, int64_t heads, int64_t head_dim);
ValueId merge_heads(GraphContext& c, ValueId x);
// Multi-head attention through the fused attention op: out(softmax(q k^T * scale + masks) v)
// with q = x_q Wq^T + bq, k/v from x_kv. key_padding_mask: u8 [B, Nk], 1 = attend, 0 = padding
// (kNoValue: no mask). A masked key gets zero weight, which equals the official codes'
// additive -1e6 / -1e4 / -inf masks whenever a query sees at least one key.
ValueId multi_head_attention(GraphContext& c, ValueId x_q, ValueId x_kv, const AttentionSpec& spec,
                             ValueId key_padding_mask);

// --- embeddings -------------------------------------------------------------------------
// nn.Embedding lookup: ids (i32/i64, any shape) -> [ids..., D]. An id outside the table is an
// out_of_range error at run time naming the node ("<prefix>").
ValueId embedding(GraphContext& c, ValueId ids, const std::string& prefix);
// x [B, N, D] + rows offset .. offset+N-1 of the learned position table "<prefix>.weight".
// The caller checks offset + N <= rows (a clear error beats the slice's clamping).
ValueId add_learned_positions(GraphContext& c, ValueId x, const std::string& prefix, int64_t offset);

// --- inputs and masks -------------------------------------------------------------------
struct TokenInputs {
  ValueId ids = kNoValue;   // i32/i64 [B, N]
  ValueId mask = kNoValue;  // as given (u8/i32/i64/f32 [B, N]) or kNoValue
  int64_t batch = 0;
  int64_t length = 0;
};
// Checks "input_ids" (or ids_name; i32/i64, rank 2, B >= 1, 1 <= N <= max_length) and the optional
// "attention_mask" (or mask_name; u8/i32/i64/f32, same [B, N]); fails the builder with a message naming the
// input. `max_length_what` explains the limit ("max_seq_len 300 of the config").
TokenInputs token_inputs(GraphContext& c, int64_t max_length, const std::string& max_length_what,
                         const std::string& ids_name = "input_ids",
                         const std::string& mask_name = "attention_mask");
// The mask as u8 (nonzero = attend); values must be 0/1 (a float mask is truncated).
ValueId mask_to_u8(GraphContext& c, ValueId mask);
// u8 [B, N] mask -> f32 [B, N, 1] of 0/1, to multiply [B, N, D] activations.
ValueId mask_to_f32_column(GraphContext& c, ValueId mask_u8);

// --- pooling ----------------------------------------------------------------------------
// x[:, 0] of [B, N, D] -> [B, D] (CLS pooling).
ValueId first_token(GraphContext& c, ValueId x);

}  // namespace longrun::models
