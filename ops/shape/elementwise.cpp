// Shape/dtype inference of the elementwise ops: add, sub, mul (numpy broadcasting), the
// unary f32 ops (scale, exp, tanh, relu, gelu, gelu_tanh) and cast.
#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {
namespace {

// add/sub/mul: two f32 inputs; the output has the broadcast shape of both.
Status infer_binary(std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, in[0], {DType::f32}));
  LR_RETURN_IF_ERROR(shape::expect_dtype(1, in[1], {DType::f32}));
  auto dims = shape::broadcast_dims(in[0].dims(), in[1].dims());
  if (!dims.ok())
    return dims.status().with_context(shape::describe_input(0, in[0]) + " and " +
                                      shape::describe_input(1, in[1]));
  LR_ASSIGN_OR_RETURN(out[0], shape::make_desc(DType::f32, *dims));
  return {};
}

// The unary activations: f32 in, f32 out, same shape.
Status infer_unary(std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, in[0], {DType::f32}));
  LR_ASSIGN_OR_RETURN(out[0], shape::make_desc(DType::f32, in[0].dims()));
  return {};
}

}  // namespace

Status infer_add(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_binary(in, out).with_context("add");
}
Status infer_sub(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_binary(in, out).with_context("sub");
}
Status infer_mul(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_binary(in, out).with_context("mul");
}
Status infer_scale(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_unary(in, out).with_context("scale");
}
Status infer_exp(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_unary(in, out).with_context("exp");
}
Status infer_tanh(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_unary(in, out).with_context("tanh");
}
Status infer_relu(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_unary(in, out).with_context("relu");
}
Status infer_gelu(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_unary(in, out).with_context("gelu");
}
Status infer_gelu_tanh(const OpAttrs&, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_unary(in, out).with_context("gelu_tanh");
}

// cast: any dtype to attrs.to, same shape. Value range problems are run-time errors of the
// kernel; here only the target dtype itself is checked (an attrs struct read from a file
// may hold any byte).
Status infer_cast(const OpAttrs& attrs, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  const auto* a = std::get_if<CastAttrs>(&attrs);
  if (a == nullptr) return invalid_argument("cast: attribute struct does not belong to this op");
  if (int(a->to) >= kNumDTypes)
    return invalid_argument("cast: attribute to: unknown dtype code " + std::to_string(int(a->to)));
  if (a->to == DType::i8)
    return invalid_argument(
        "cast: attribute to: i8 holds only a quantized weight's values, not a cast's result");
  auto d = shape::make_desc(a->to, in[0].dims());
  if (!d.ok()) return d.status().with_context("cast");
  out[0] = *d;
  return {};
}

}  // namespace longrun
