// Shape/dtype inference of the normalisation ops: softmax and layer_norm.
#include <cmath>

#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {
namespace {

Status infer_softmax_impl(const OpAttrs& attrs, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  const auto* a = std::get_if<SoftmaxAttrs>(&attrs);
  if (a == nullptr) return invalid_argument("attribute struct does not belong to this op");
  const TensorDesc& x = in[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_ASSIGN_OR_RETURN(const int axis, shape::resolve_axis(0, x, a->axis));
  if (a->causal) {
    // The causal rule indexes rows along axis -2 and columns along the softmax axis, so
    // the softmax axis must be the last one of a rank >= 2 input.
    if (x.rank() < 2) return invalid_argument("causal needs rank >= 2, found " + shape::describe_input(0, x));
    if (axis != x.rank() - 1)
      return invalid_argument("causal needs the softmax axis to be the last axis, found axis " +
                              std::to_string(a->axis) + " for " + shape::describe_input(0, x));
  }
  const size_t expected = a->has_mask ? 2 : 1;
  if (in.size() != expected)
    return invalid_argument("has_mask=" + std::string(a->has_mask ? "true" : "false") + " needs " +
                            std::to_string(expected) + " inputs, found " + std::to_string(in.size()));
  if (a->has_mask) {
    // The mask is added to x, so it must broadcast to x without growing the output.
    LR_RETURN_IF_ERROR(shape::expect_dtype(1, in[1], {DType::f32}));
    LR_RETURN_IF_ERROR(shape::expect_broadcasts_to(1, in[1], x.dims()));
  }
  LR_ASSIGN_OR_RETURN(out[0], shape::make_desc(DType::f32, x.dims()));
  return {};
}

Status infer_layer_norm_impl(const OpAttrs& attrs, std::span<const TensorDesc> in,
                             std::span<TensorDesc> out) {
  const auto* a = std::get_if<LayerNormAttrs>(&attrs);
  if (a == nullptr) return invalid_argument("attribute struct does not belong to this op");
  // A negative or NaN eps would make sqrt(var + eps) NaN for constant rows.
  if (!(a->eps >= 0.0f) || !std::isfinite(a->eps))
    return invalid_argument("attribute eps must be finite and >= 0, found " + std::to_string(a->eps));
  const TensorDesc& x = in[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_RETURN_IF_ERROR(shape::expect_rank(0, x, 1, kMaxRank));
  const int64_t D = x.dim(x.rank() - 1);
  for (int i = 1; i <= 2; ++i) {
    LR_RETURN_IF_ERROR(shape::expect_dtype(i, in[size_t(i)], {DType::f32, DType::f16, DType::bf16}));
    LR_RETURN_IF_ERROR(shape::expect_rank(i, in[size_t(i)], 1, 1));
    LR_RETURN_IF_ERROR(shape::expect_dim(i, in[size_t(i)], 0, D, "D, the last dim of input 0"));
  }
  LR_ASSIGN_OR_RETURN(out[0], shape::make_desc(DType::f32, x.dims()));
  return {};
}

}  // namespace

Status infer_softmax(const OpAttrs& attrs, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_softmax_impl(attrs, in, out).with_context("softmax");
}

Status infer_layer_norm(const OpAttrs& attrs, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_layer_norm_impl(attrs, in, out).with_context("layer_norm");
}

}  // namespace longrun
