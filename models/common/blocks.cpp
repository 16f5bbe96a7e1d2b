#include "common/blocks.h"

#include <algorithm>
#include <string>

namespace longrun::models {
namespace {

std::string shape_of(const TensorDesc& d) { return d.to_string(); }

bool one_of(DType t, std::initializer_list<DType> allowed) {
  return std::find(allowed.begin(), allowed.end(), t) != allowed.end();
}

}  // namespace

ValueId reshape(GraphContext& c, ValueId x, std::initializer_list<int64_t> dims) {
  if (!c.ok()) return kNoValue;
  ReshapeAttrs a;
  a.rank = int(dims.size());
  std::copy(dims.begin(), dims.end(), a.dims.begin());
  return c.b.reshape({x}, a);
}

ValueId transpose(GraphContext& c, ValueId x, std::initializer_list<int> perm) {
  if (!c.ok()) return kNoValue;
  TransposeAttrs a;
  a.rank = int(perm.size());
  std::copy(perm.begin(), perm.end(), a.perm.begin());
  return c.b.transpose({x}, a);
}

ValueId slice(GraphContext& c, ValueId x, int axis, int64_t start, int64_t end) {
  if (!c.ok()) return kNoValue;
  return c.b.slice({x}, {.axis = axis, .start = start, .end = end});
}

ValueId linear(GraphContext& c, ValueId x, const std::string& prefix, Activation act, bool bias) {
  const ValueId w = c.weight(prefix + ".weight");
  if (!bias) return c.b.matmul({x, w}, {.trans_b = true, .activation = act}, prefix);
  const ValueId b = c.weight(prefix + ".bias");
  return c.b.matmul({x, w, b}, {.trans_b = true, .has_bias = true, .activation = act}, prefix);
}

ValueId layer_norm(GraphContext& c, ValueId x, const std::string& prefix, float eps) {
  const ValueId gamma = c.weight(prefix + ".weight");
  const ValueId beta = c.weight(prefix + ".bias");
  return c.b.layer_norm({x, gamma, beta}, {.eps = eps}, prefix);
}

ValueId feed_forward(GraphContext& c, ValueId x, const std::string& fc1, const std::string& fc2,
                     Activation act) {
  return linear(c, linear(c, x, fc1, act), fc2);
}

ValueId split_heads(GraphContext& c, ValueId x, int64_t heads, int64_t head_dim) {
  if (!c.ok()) return kNoValue;
  const TensorDesc& d = c.desc(x);
  return transpose(c, reshape(c, x, {d.dim(0), d.dim(1), heads, head_dim}), {0, 2, 1, 3});
}

ValueId merge_heads(GraphContext& c, ValueId x) {
  if (!c.ok()) return kNoValue;
  const TensorDesc& d = c.desc(x);  // [B, H, N, hd]
  return reshape(c, transpose(c, x, {0, 2, 1, 3}), {d.dim(0), d.dim(2), d.dim(1) * d.dim(3)});
}

ValueId multi_head_attention(GraphContext& c, ValueId x_q, ValueId x_kv, const AttentionSpec& spec,
                             ValueId key_padding_mask) {
  const ValueId q = split_heads(c, linear(c, x_q, spec.q), spec.heads, spec.head_dim);
  const ValueId k = split_heads(c, linear(c, x_kv, spec.k), spec.heads, spec.head_dim);
  const ValueId v = split_heads(c, linear(c, x_kv, spec.v), spec.heads, spec.head_dim);
  if (!c.ok()) return kNoValue;
  AttentionAttrs a{
      .scale = spec.scale, .causal = spec.causal, .has_key_padding_mask = key_padding_mask != kNoValue};
  std::vector<ValueId> in = {q, k, v};
  if (a.has_key_padding_mask) in.push_back(key_padding_mask);
  const ValueId y = c.b.attention(in, a, spec.name.empty() ? spec.q + ".attention" : spec.name);
  return linear(c, merge_heads(c, y), spec.out);
}

ValueId embedding(GraphContext& c, ValueId ids, const std::string& prefix) {
  const ValueId table = c.weight(prefix + ".weight");
  return c.b.embedding({table, ids}, {}, prefix);
}

ValueId add_learned_positions(GraphContext& c, ValueId x, const std::string& prefix, int64_t offset) {
  const ValueId table = c.weight(prefix + ".weight");
  if (!c.ok()) return kNoValue;
  const int64_t n = c.desc(x).dim(1);
  ValueId rows = c.b.slice({table}, {.axis = 0, .start = offset, .end = offset + n}, prefix);
  // A f16/bf16 table stays as stored; only the N rows used are widened.
  if (c.ok() && c.desc(rows).dtype() != DType::f32)
    rows = c.b.cast({rows}, {.to = DType::f32}, prefix + ".to_f32");
  return c.b.add({x, rows}, {}, prefix + ".add");
}

TokenInputs token_inputs(GraphContext& c, int64_t max_length, const std::string& max_length_what,
                         const std::string& ids_name, const std::string& mask_name) {
  TokenInputs t;
  t.ids = c.input(ids_name);
  t.mask = c.input(mask_name);
  if (!c.ok()) return t;
  if (t.ids == kNoValue) {
    c.fail(invalid_argument("input '" + ids_name + "' is required"));
    return t;
  }
  const TensorDesc& ids = c.desc(t.ids);
  if (!one_of(ids.dtype(), {DType::i32, DType::i64}) || ids.rank() != 2) {
    c.fail(invalid_argument("input '" + ids_name + "': expected i32 or i64 [B, N], found " + shape_of(ids)));
    return t;
  }
  t.batch = ids.dim(0);
  t.length = ids.dim(1);
  if (t.batch < 1 || t.length < 1) {
    c.fail(invalid_argument("input '" + ids_name + "': expected B >= 1 and N >= 1, found " + shape_of(ids)));
    return t;
  }
  if (t.length > max_length) {
    c.fail(out_of_range("input '" + ids_name + "': sequence length " + std::to_string(t.length) +
                        " is longer than the model allows (" + std::to_string(max_length) + ", " +
                        max_length_what + ")"));
    return t;
  }
  if (t.mask != kNoValue) {
    const TensorDesc& m = c.desc(t.mask);
    if (!one_of(m.dtype(), {DType::u8, DType::i32, DType::i64, DType::f32}) || m.rank() != 2 ||
        m.dim(0) != t.batch || m.dim(1) != t.length) {
      c.fail(invalid_argument("input '" + mask_name + "': expected u8, i32, i64 or f32 [" +
                              std::to_string(t.batch) + ", " + std::to_string(t.length) + "] (as " +
                              ids_name + "), found " + shape_of(m)));
    }
  }
  return t;
}

ValueId mask_to_u8(GraphContext& c, ValueId mask) {
  if (!c.ok()) return kNoValue;
  if (c.desc(mask).dtype() == DType::u8) return mask;
  return c.b.cast({mask}, {.to = DType::u8}, "attention_mask.to_u8");
}

ValueId mask_to_f32_column(GraphContext& c, ValueId mask_u8) {
  if (!c.ok()) return kNoValue;
  const TensorDesc& d = c.desc(mask_u8);
  const ValueId f = c.b.cast({mask_u8}, {.to = DType::f32}, "attention_mask.to_f32");
  return reshape(c, f, {d.dim(0), d.dim(1), 1});
}

ValueId first_token(GraphContext& c, ValueId x) {
  if (!c.ok()) return kNoValue;
  const TensorDesc& d = c.desc(x);
  return reshape(c, slice(c, x, 1, 0, 1), {d.dim(0), d.dim(2)});
}

}  // namespace longrun::models
