// Shape/dtype inference of attention (fused, dense) and sparse_attention (gathered keys).
// Both take q [B, H, Nq, hd], k [B, H, Nk, hd], v [B, H, Nk, hv] and give [B, H, Nq, hv].
#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {
namespace {

// The q/k/v checks both ops share. B and H do not broadcast between q, k and v.
Status check_qkv(std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  for (int i = 0; i < 3; ++i) {
    LR_RETURN_IF_ERROR(shape::expect_dtype(i, in[size_t(i)], {DType::f32}));
    LR_RETURN_IF_ERROR(shape::expect_rank(i, in[size_t(i)], 4, 4));
  }
  const TensorDesc& q = in[0];
  const TensorDesc& k = in[1];
  const TensorDesc& v = in[2];
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
  LR_RETURN_IF_ERROR(check_qkv(in, out));
  if (a->has_key_padding_mask) {
    const TensorDesc& mask = in[3];
    LR_RETURN_IF_ERROR(shape::expect_dtype(3, mask, {DType::u8}));
    LR_RETURN_IF_ERROR(shape::expect_rank(3, mask, 2, 2));
    LR_RETURN_IF_ERROR(shape::expect_dim(3, mask, 0, in[0].dim(0), "B, from input 0"));
    LR_RETURN_IF_ERROR(shape::expect_dim(3, mask, 1, in[1].dim(2), "Nk, from input 1"));
  }
  return {};
}

Status infer_sparse_attention_impl(std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  LR_RETURN_IF_ERROR(check_qkv(in, out));
  // indices [B or 1, H or 1, Nq, kk]: broadcast over batch and heads only.
  const TensorDesc& idx = in[3];
  LR_RETURN_IF_ERROR(shape::expect_dtype(3, idx, {DType::i32}));
  LR_RETURN_IF_ERROR(shape::expect_rank(3, idx, 4, 4));
  if (idx.dim(0) != 1) LR_RETURN_IF_ERROR(shape::expect_dim(3, idx, 0, in[0].dim(0), "B or 1, from input 0"));
  if (idx.dim(1) != 1) LR_RETURN_IF_ERROR(shape::expect_dim(3, idx, 1, in[0].dim(1), "H or 1, from input 0"));
  LR_RETURN_IF_ERROR(shape::expect_dim(3, idx, 2, in[0].dim(2), "Nq, from input 0"));
  return {};
}

}  // namespace

Status infer_attention(const OpAttrs& attrs, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_attention_impl(attrs, in, out).with_context("attention");
}

Status infer_sparse_attention(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_sparse_attention_impl(in, out).with_context("sparse_attention");
}

}  // namespace longrun
