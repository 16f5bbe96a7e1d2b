// Combiner (Ren et al. 2021; google-research/combiner): arch "combiner" (docs/models.md#combiner).
//
// The model is the JAX LanguageModel (net.py/main.py): Embed -> + sinusoidal PE (Flax WMT,
// concatenated sin|cos halves) -> pre-LN layers (LN eps 1e-6, q/k/v/out without bias,
// q / sqrt(hd), ReLU MLP with biases) -> LN -> Dense(V) LM head. The attention is one of the
// four Combiner forms; causal forms follow the JAX code, bidirectional ones the TF code
// (approx_attention.py: sqrt_fixed_full, axial_rowmajor with row_summary 'proj',
// axial_mixture_bidir), with the JAX model around them.
//
// longrun.config fields (the JAX config names):
//   vocab_size   V                                                              (required)
//   emb_dim      D (even: the sinusoidal PE has D/2 sin and D/2 cos columns)    (required)
//   num_heads    H                                                              (required)
//   qkv_dim      H * hd (the JAX default is 512, not D)                         (required)
//   mlp_dim      MLP width                                                      (required)
//   num_layers                                                                  (required)
//   max_len      longest input; the JAX model always runs at exactly max_len, which equals
//                padding shorter inputs (exact for causal forms, docs/models.md#combiner-padding) (required)
//   max_seg_len  s, the segment (row) length; max_len % s == 0 (JAX reshapes with both);
//                not used by logsparse                                (required but logsparse)
//   attention    "fixed" | "logsparse" | "axial" | "mixture"                   (required)
//   causal       true (JAX forms) | false (TF forms; logsparse has none)     (default true)
//   key_padding  bidirectional only: false = the TF reference (inputs padded to a multiple
//                of s with id 0, pads take part like tokens); true = docs/models.md#combiner-padding (b):
//                pads and attention_mask zeros get no direct weight, are left out of every pooling and local
//                expectation, and partitions without a real token are masked
//                                                                            (default false)
//   pooling      bidirectional mixture only: "max" (paper / JAX cummax) or "sum" (the TF
//                code's approx_cummax, which is a cumsum)                    (default "max")
//   dropout_rate, attention_dropout_rate: training-only, accepted and ignored
//
// Inputs: input_ids i32/i64 [B, N], 1 <= N <= max_len (every form, logsparse included, runs
// any such N); attention_mask u8/i32/i64/f32 [B, N] of 0/1 only with key_padding (absent = all
// ones). Causal forms pad internally to a multiple of s, which changes no real position.
// Outputs: last_hidden_state f32 [B, N, D] (after the final LayerNorm), logits f32 [B, N, V].
// Debug outputs (first layer): debug.layer0.attention (after the output projection, before
// the residual) and debug.layer0.output, [B, N, D]; debug.layer0.summary_keys at the padded
// length (fixed: the pooled segment keys [B, H, n, hd]; axial: K~ [B, H, Np, hd]; mixture:
// the pooled column-summary keys [B, H, Np, hd]; none for logsparse). A partition without a
// real token (key_padding) shows 0.
//
// Parameter names (Flax, canonical; "/" joins the module path):
//   Embed_0/embedding [V, D]
//   autoreg_model/transformer_layer_<l>/LayerNorm_0/{scale, bias} [D]
//   autoreg_model/transformer_layer_<l>/<Attn>_0/{query, key, value}/kernel [D, H, hd]
//   autoreg_model/transformer_layer_<l>/<Attn>_0/DenseGeneral_0/kernel [H, hd, D]  (output)
//     axial: DenseGeneral_0 [H, hd, D] (W1), LayerNorm_0 (LN', eps 1e-6), DenseGeneral_1
//     [D, H, hd] (W2), and the output is DenseGeneral_2 [H, hd, D]
//   autoreg_model/transformer_layer_<l>/LayerNorm_1/{scale, bias}
//   autoreg_model/transformer_layer_<l>/MlpBlock_0/Dense_0/{kernel [D, mlp], bias [mlp]}
//   autoreg_model/transformer_layer_<l>/MlpBlock_0/Dense_1/{kernel [mlp, D], bias [D]}
//   autoreg_model/LayerNorm_0/{scale, bias}, autoreg_model/Dense_0/{kernel [D, V], bias [V]}
//   <Attn> = _SelfAttSqrtn (fixed), _SelfAttLogn, _SelfAttAxialRowmajor, _AxialMixtureAtt.
// TF1 names for a converter (docs/models.md#combiner-parameters): word_embeddings/weights =
// Embed_0/embedding; layer_<lll>/attn/pre_norm/{gamma, beta} = LayerNorm_0; layer_<lll>/attn/{q,k,v}/weight
// [D, H, hd] = query/key/value kernel (the TF biases have no slot here: a TF checkpoint needs
// zero biases or a TF-flavoured variant); attn/dense/weight = the output kernel;
// attn/rowmajor_param_post/{dense, pre_norm, dense_1} = W1, LN', W2; layer_<lll>/ffn/pre_norm
// = LayerNorm_1, ffn/dense, ffn/dense_1 = MlpBlock_0/Dense_0, Dense_1; final_norm =
// autoreg_model/LayerNorm_0; the TF head is tied (word_embeddings^T, softmax_bias), its PE
// learned (pos_embeddings), its FFN GELU-tanh and its LN eps 1e-5: not this model.
#pragma once

#include <memory>
#include <string_view>

#include "common/architecture.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_combiner_config(std::string_view config_json);

}  // namespace longrun::models
