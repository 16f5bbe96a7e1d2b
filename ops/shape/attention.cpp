// Shape/dtype inference of attention (fused, dense), sparse_attention (gathered keys) and
// axial_attention (row keys + column slots). All take q [B, H, Nq, hd], k [B, H, Nk, hd],
// v [B, H, Nk, hv] and give [B, H, Nq, hv] f32; axial_attention has Nq = Nk = N. k and v
// are f32, or both bf16 for attention and sparse_attention (axial_attention: f32 only).
#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {
namespace {

// The q/k/v checks the ops share. B and H do not broadcast between q, k and v. q is f32;
// with kv_bf16_ok, k and v may instead both be bf16 (attention and sparse_attention widen
// them exactly to f32 on load), else they are f32 too.
Status check_qkv(std::span<const TensorDesc> in, std::span<TensorDesc> out, bool kv_bf16_ok) {
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, in[0], {DType::f32}));
  for (int i = 1; i < 3; ++i) {
    if (kv_bf16_ok)
      LR_RETURN_IF_ERROR(shape::expect_dtype(i, in[size_t(i)], {DType::f32, DType::bf16}));
    else
      LR_RETURN_IF_ERROR(shape::expect_dtype(i, in[size_t(i)], {DType::f32}));
  }
  for (int i = 0; i < 3; ++i) LR_RETURN_IF_ERROR(shape::expect_rank(i, in[size_t(i)], 4, 4));
  const TensorDesc& q = in[0];
  const TensorDesc& k = in[1];
  const TensorDesc& v = in[2];
  if (k.dtype() != v.dtype())
    return invalid_argument(shape::describe_input(2, v) + ": expected the dtype of input 1 (" +
                            std::string(dtype_name(k.dtype())) + "), found " +
                            std::string(dtype_name(v.dtype())));
  LR_RETURN_IF_ERROR(shape::expect_dim(1, k, 0, q.dim(0), "B, from input 0"));
  LR_RETURN_IF_ERROR(shape::expect_dim(1, k, 1, q.dim(1), "H, from input 0"));
  LR_RETURN_IF_ERROR(shape::expect_dim(1, k, 3, q.dim(3), "head dim, from input 0"));
  LR_RETURN_IF_ERROR(shape::expect_dim(2, v, 0, q.dim(0), "B, from input 0"));
  LR_RETURN_IF_ERROR(shape::expect_dim(2, v, 1, q.dim(1), "H, from input 0"));
  LR_RETURN_IF_ERROR(shape::expect_dim(2, v, 2, k.dim(2), "Nk, from input 1"));
  const int64_t dims[4] = {q.dim(0), q.dim(1), q.dim(2), v.dim(3)};
  LR_ASSIGN_OR_RETURN(out[0], shape::make_desc(DType::f32, dims));
  return {};
}

Status infer_attention_impl(const OpAttrs& attrs, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  const auto* a = std::get_if<AttentionAttrs>(&attrs);
  if (a == nullptr) return invalid_argument("attribute struct does not belong to this op");
  const size_t expected = a->has_key_padding_mask ? 4 : 3;
  if (in.size() != expected)
    return invalid_argument(
        "has_key_padding_mask=" + std::string(a->has_key_padding_mask ? "true" : "false") + " needs " +
        std::to_string(expected) + " inputs, found " + std::to_string(in.size()));
  LR_RETURN_IF_ERROR(check_qkv(in, out, true));
  if (a->has_key_padding_mask) {
    const TensorDesc& mask = in[3];
    LR_RETURN_IF_ERROR(shape::expect_dtype(3, mask, {DType::u8}));
    LR_RETURN_IF_ERROR(shape::expect_rank(3, mask, 2, 2));
    LR_RETURN_IF_ERROR(shape::expect_dim(3, mask, 0, in[0].dim(0), "B, from input 0"));
    LR_RETURN_IF_ERROR(shape::expect_dim(3, mask, 1, in[1].dim(2), "Nk, from input 1"));
  }
  if (a->with_lse) {
    const int64_t dims[3] = {in[0].dim(0), in[0].dim(1), in[0].dim(2)};
    LR_ASSIGN_OR_RETURN(out[1], shape::make_desc(DType::f32, dims));
  }
  return {};
}

Status infer_sparse_attention_impl(std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  LR_RETURN_IF_ERROR(check_qkv(in, out, true));
  // indices [B or 1, H or 1, Nq, kk]: broadcast over batch and heads only.
  const TensorDesc& idx = in[3];
  LR_RETURN_IF_ERROR(shape::expect_dtype(3, idx, {DType::i32}));
  LR_RETURN_IF_ERROR(shape::expect_rank(3, idx, 4, 4));
  if (idx.dim(0) != 1) LR_RETURN_IF_ERROR(shape::expect_dim(3, idx, 0, in[0].dim(0), "B or 1, from input 0"));
  if (idx.dim(1) != 1) LR_RETURN_IF_ERROR(shape::expect_dim(3, idx, 1, in[0].dim(1), "H or 1, from input 0"));
  LR_RETURN_IF_ERROR(shape::expect_dim(3, idx, 2, in[0].dim(2), "Nq, from input 0"));
  return {};
}

// ks / vs: the column-slot keys and values, shaped as k and v. N must be whole segments.
Status infer_axial_attention_impl(const OpAttrs& attrs, std::span<const TensorDesc> in,
                                  std::span<TensorDesc> out) {
  const auto* a = std::get_if<AxialAttentionAttrs>(&attrs);
  if (a == nullptr) return invalid_argument("attribute struct does not belong to this op");
  const size_t expected = a->has_key_padding_mask ? 6 : 5;
  if (in.size() != expected)
    return invalid_argument(
        "has_key_padding_mask=" + std::string(a->has_key_padding_mask ? "true" : "false") + " needs " +
        std::to_string(expected) + " inputs, found " + std::to_string(in.size()));
  const TensorDesc& q = in[0];
  const int64_t n_pos = q.dim(2);
  if (a->has_direct_state) {
    // Inputs: q [B, H, N, hd], y0 [B, H, N, hv], lse0 [B, H, N], ks [B, H, N, hd], vs [B, H, N, hv].
    for (int i : {0, 3, 4}) {
      LR_RETURN_IF_ERROR(shape::expect_dtype(i, in[size_t(i)], {DType::f32}));
      LR_RETURN_IF_ERROR(shape::expect_rank(i, in[size_t(i)], 4, 4));
    }
    const TensorDesc &y0 = in[1], &lse0 = in[2], &ks = in[3], &vs = in[4];
    const char* names[3] = {"B", "H", "N"};
    auto like_q = [&](int index, const TensorDesc& d, int axis) {
      return shape::expect_dim(index, d, axis, q.dim(axis), std::string(names[axis]) + ", from input 0");
    };
    LR_RETURN_IF_ERROR(shape::expect_dtype(1, y0, {DType::f32}));
    LR_RETURN_IF_ERROR(shape::expect_rank(1, y0, 4, 4));
    for (int axis = 0; axis < 3; ++axis) LR_RETURN_IF_ERROR(like_q(1, y0, axis));
    LR_RETURN_IF_ERROR(shape::expect_dim(1, y0, 3, vs.dim(3), "hv, from input 4"));
    LR_RETURN_IF_ERROR(shape::expect_dtype(2, lse0, {DType::f32}));
    LR_RETURN_IF_ERROR(shape::expect_rank(2, lse0, 3, 3));
    for (int axis = 0; axis < 3; ++axis) LR_RETURN_IF_ERROR(like_q(2, lse0, axis));
    for (int axis = 0; axis < 3; ++axis) LR_RETURN_IF_ERROR(like_q(3, ks, axis));
    LR_RETURN_IF_ERROR(shape::expect_dim(3, ks, 3, q.dim(3), "head dim, from input 0"));
    for (int axis = 0; axis < 3; ++axis) LR_RETURN_IF_ERROR(like_q(4, vs, axis));
    LR_ASSIGN_OR_RETURN(out[0], shape::make_desc(DType::f32, vs.dims()));
  } else {
    LR_RETURN_IF_ERROR(check_qkv(in, out, false));
    LR_RETURN_IF_ERROR(
        shape::expect_dim(1, in[1], 2, n_pos, "N, from input 0 (keys are the query positions)"));
    for (int i = 3; i < 5; ++i) {
      LR_RETURN_IF_ERROR(shape::expect_dtype(i, in[size_t(i)], {DType::f32}));
      LR_RETURN_IF_ERROR(shape::expect_rank(i, in[size_t(i)], 4, 4));
      const TensorDesc& like = in[size_t(i - 2)];  // ks like k, vs like v
      for (int axis = 0; axis < 4; ++axis)
        LR_RETURN_IF_ERROR(
            shape::expect_dim(i, in[size_t(i)], axis, like.dim(axis),
                              "dim " + std::to_string(axis) + ", from input " + std::to_string(i - 2)));
    }
  }
  if (a->segment < 1 || n_pos % a->segment != 0)
    return invalid_argument("segment " + std::to_string(a->segment) +
                            " must be >= 1 and divide N = " + std::to_string(n_pos));
  if (a->has_key_padding_mask) {
    const TensorDesc& mask = in[5];
    LR_RETURN_IF_ERROR(shape::expect_dtype(5, mask, {DType::u8}));
    LR_RETURN_IF_ERROR(shape::expect_rank(5, mask, 2, 2));
    LR_RETURN_IF_ERROR(shape::expect_dim(5, mask, 0, q.dim(0), "B, from input 0"));
    LR_RETURN_IF_ERROR(shape::expect_dim(5, mask, 1, n_pos, "N, from input 0"));
  }
  return {};
}

}  // namespace

Status infer_attention(const OpAttrs& attrs, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_attention_impl(attrs, in, out).with_context("attention");
}

Status infer_sparse_attention(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_sparse_attention_impl(in, out).with_context("sparse_attention");
}

Status infer_axial_attention(const OpAttrs& attrs, std::span<const TensorDesc> in,
                             std::span<TensorDesc> out) {
  return infer_axial_attention_impl(attrs, in, out).with_context("axial_attention");
}

}  // namespace longrun
