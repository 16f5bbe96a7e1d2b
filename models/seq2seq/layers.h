// Encoder-decoder layer builders shared by the fairseq/HF-style families (bart, transformer,
// fourier-bart and lasformer): the fairseq
// TransformerEncoderLayer / TransformerDecoderLayer (= HF BartEncoderLayer /
// BartDecoderLayer), post-LN or pre-LN, with the decoder's self-attention either over the
// whole target prefix (causal) or one step against a fixed-capacity KV cache.
//
// Parameter names below a layer prefix p (fairseq = HF):
//   p.self_attn.{q,k,v,out}_proj.{weight,bias}   p.self_attn_layer_norm.{weight,bias}
//   p.encoder_attn.{q,k,v,out}_proj.*            p.encoder_attn_layer_norm.*  (decoder only)
//   p.fc1.{weight,bias}  p.fc2.{weight,bias}     p.final_layer_norm.*
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/architecture.h"
#include "longrun/ops/attrs.h"

namespace longrun::models {

inline constexpr float kSeq2SeqLayerNormEps = 1e-5f;  // fairseq / HF BART: nn.LayerNorm default

struct LayerShape {
  int64_t dim = 0;
  int64_t heads = 1;
  int64_t ffn = 0;
  Activation activation = Activation::gelu;
  bool normalize_before = false;  // pre-LN (fairseq --*-normalize-before); default post-LN
  int64_t head_dim() const { return dim / heads; }
};

// Parameter table of one layer at prefix p (with the trailing dot), decoder adds encoder_attn.
void add_encoder_layer(std::vector<ParamSpec>* table, const std::string& p, const LayerShape& s);
void add_decoder_layer(std::vector<ParamSpec>* table, const std::string& p, const LayerShape& s);

// One residual sub-block: post-LN  x = LN(x + f(x));  pre-LN  x = x + f(LN(x)).
// post_sum (post-LN only; may be empty) rewrites x + f(x) before the LN (Fourier-BART's
// global residual).
ValueId residual_block(GraphContext& c, ValueId x, const std::string& ln_prefix, bool normalize_before,
                       const std::function<ValueId(ValueId)>& f,
                       const std::function<ValueId(ValueId)>& post_sum = {});

// x [B, N, D] -> the heads [B, H, N, hd] of the projection "<attn>.<which>_proj".
ValueId project_heads(GraphContext& c, ValueId x, const std::string& attn, const char* which,
                      const LayerShape& s);
// softmax(q k^T / sqrt(hd) + masks) v for head tensors, then out_proj: -> [B, Nq, D].
// key_mask: u8 [B, Nk] (1 = attend) or kNoValue. With selected (i32 [B, 1, Nq, kk], -1 =
// unused slot, e.g. from seq2seq/key_selection.h) each query attends only over its listed keys
// (sparse_attention, O(Nq kk hd)); the list already excludes masked keys, so the masks are
// not applied again.
ValueId attend_and_project(GraphContext& c, ValueId q, ValueId k, ValueId v, const std::string& attn,
                           const LayerShape& s, bool causal, ValueId key_mask, ValueId selected = kNoValue);

// Lasformer's hook into the layers: given the attention prefix ("<p>self_attn" or
// "<p>encoder_attn"), the query-side input xq [B, Nq, D] (the attention's input after any
// pre-LN), the key-side input xk [B, Nk, D] (xq itself, or the encoder output), causality and
// the key mask, returns the selected key indices for attend_and_project, or kNoValue for
// dense attention. Empty = dense everywhere. In a decoder step, self-attention passes the
// step's row as xk and the slot mask (the selector keeps its own cache of selection keys).
using KeySelector =
    std::function<ValueId(const std::string& attn, ValueId xq, ValueId xk, bool causal, ValueId key_mask)>;

// The encoder's keys and values for a decoder layer's cross-attention ("<p>encoder_attn"):
// [B, H, Ns, hd] each. Computed once per source; generation caches them.
std::pair<ValueId, ValueId> cross_attention_kv(GraphContext& c, ValueId memory, const std::string& p,
                                               const LayerShape& s);

// fairseq TransformerEncoderLayer at prefix p; before_final_norm is the FFN block's post_sum.
ValueId encoder_layer(GraphContext& c, ValueId x, const std::string& p, const LayerShape& s, ValueId key_mask,
                      const std::function<ValueId(ValueId)>& before_final_norm = {},
                      const KeySelector& select = {});

// The decoder's self-attention, one of two ways.
struct DecoderSelfAttention {
  // Whole prefix: causal attention over x itself, plus an optional u8 [B, N] padding mask.
  ValueId padding_mask = kNoValue;
  // One step with a KV cache of capacity S (all set, or all kNoValue): past_k/past_v f32 or
  // bf16 (both the same; the step's key and value are cast to it) [B, H, S, hd]; write_slot u8 [1, 1, S, 1]
  // is 1 at the slot of this step; slot_mask u8 [B, S] is 1 for the slots written so far including this one.
  // The step writes its key and value into the slot (present_* = where(write_slot, new, past)) and attends
  // over the valid slots: a fixed-shape graph for every step up to S.
  ValueId past_k = kNoValue, past_v = kNoValue, write_slot = kNoValue, slot_mask = kNoValue;
  // Out (step mode): the updated caches [B, H, S, hd].
  ValueId present_k = kNoValue, present_v = kNoValue;
};

// Cross-attention inputs: keys/values from cross_attention_kv and the source mask.
struct DecoderCrossAttention {
  ValueId k = kNoValue, v = kNoValue;
  ValueId key_mask = kNoValue;  // u8 [B, Ns] or kNoValue
  ValueId memory = kNoValue;    // the encoder output [B, Ns, D]: the key side of a KeySelector
};

// fairseq TransformerDecoderLayer at prefix p (self-attn, cross-attn, FFN).
ValueId decoder_layer(GraphContext& c, ValueId x, const std::string& p, const LayerShape& s,
                      DecoderSelfAttention& self, const DecoderCrossAttention& cross,
                      const KeySelector& select = {});

// A graph constant owned by the graph (f32 or any dtype; `values` bytes as desc says).
ValueId constant(GraphContext& c, const std::string& name, const TensorDesc& desc,
                 std::shared_ptr<const std::vector<float>> values);

// fairseq utils.make_positions for ids [B, N] (i32/i64): non-pad tokens get pad + 1, pad + 2,
// ... counting non-pad tokens from the left; pad tokens get `pad`. Returns {positions i64
// [B, N], non-pad f32 [B, N]}. Built from an embedding lookup of a [V, 1] 0/1 table and the
// cumsum op along N (exact in f32 below 2^24); the only constant is that [V] table.
std::pair<ValueId, ValueId> make_positions(GraphContext& c, ValueId ids, int64_t pad, int64_t vocab,
                                           const std::string& name);

}  // namespace longrun::models
