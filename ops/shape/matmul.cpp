// Shape/dtype inference of matmul: Y = act(alpha * op(A) op(B) + bias + beta * C).
// Inputs in order: A, B, then bias (has_bias), then C (has_c); attrs.h has the layout rules.
#include <vector>

#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {
namespace {

// The leading (batch) dims of a rank >= 2 desc.
std::span<const int64_t> batch_dims(const TensorDesc& d) { return d.dims().first(size_t(d.rank() - 2)); }

Status infer_matmul_impl(const OpAttrs& attrs, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  const auto* a = std::get_if<MatmulAttrs>(&attrs);
  if (a == nullptr) return invalid_argument("attribute struct does not belong to this op");
  if (int(a->activation) > int(Activation::gelu_tanh))
    return invalid_argument("attribute activation: unknown code " + std::to_string(int(a->activation)));

  // The flags say which optional inputs exist, so the count must agree with them exactly.
  const size_t expected = 2 + (a->has_bias ? 1 : 0) + (a->has_c ? 1 : 0);
  if (in.size() != expected)
    return invalid_argument("has_bias=" + std::string(a->has_bias ? "true" : "false") +
                            " has_c=" + std::string(a->has_c ? "true" : "false") + " needs " +
                            std::to_string(expected) + " inputs, found " + std::to_string(in.size()));

  const TensorDesc& A = in[0];
  const TensorDesc& B = in[1];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, A, {DType::f32}));
  // i8: a quantized weight (graph.h ChannelScales), which backends read dequantized.
  LR_RETURN_IF_ERROR(shape::expect_dtype(1, B, {DType::f32, DType::f16, DType::bf16, DType::i8}));
  LR_RETURN_IF_ERROR(shape::expect_rank(0, A, 2, kMaxRank));
  LR_RETURN_IF_ERROR(shape::expect_rank(1, B, 2, kMaxRank));

  const int ra = A.rank(), rb = B.rank();
  const int64_t M = a->trans_a ? A.dim(ra - 1) : A.dim(ra - 2);
  const int64_t K = a->trans_a ? A.dim(ra - 2) : A.dim(ra - 1);
  const int kb_axis = a->trans_b ? rb - 1 : rb - 2;
  const int64_t N = a->trans_b ? B.dim(rb - 2) : B.dim(rb - 1);
  LR_RETURN_IF_ERROR(shape::expect_dim(1, B, kb_axis, K, "K, from input 0"));

  auto batch = shape::broadcast_dims(batch_dims(A), batch_dims(B));
  if (!batch.ok())
    return batch.status().with_context("batch dims of " + shape::describe_input(0, A) + " and " +
                                       shape::describe_input(1, B));
  std::vector<int64_t> dims = *batch;

  size_t next = 2;
  if (a->has_bias) {
    const TensorDesc& bias = in[next];
    LR_RETURN_IF_ERROR(shape::expect_dtype(int(next), bias, {DType::f32}));
    LR_RETURN_IF_ERROR(shape::expect_rank(int(next), bias, 1, 1));
    LR_RETURN_IF_ERROR(shape::expect_dim(int(next), bias, 0, N, "N"));
    ++next;
  }
  if (a->has_c) {
    // C's batch dims join the broadcast (attrs.h); its matrix dims must be exactly [M, N].
    const TensorDesc& C = in[next];
    const int i = int(next);
    LR_RETURN_IF_ERROR(shape::expect_dtype(i, C, {DType::f32}));
    LR_RETURN_IF_ERROR(shape::expect_rank(i, C, 2, kMaxRank));
    LR_RETURN_IF_ERROR(shape::expect_dim(i, C, C.rank() - 2, M, "M"));
    LR_RETURN_IF_ERROR(shape::expect_dim(i, C, C.rank() - 1, N, "N"));
    auto with_c = shape::broadcast_dims(dims, batch_dims(C));
    if (!with_c.ok())
      return with_c.status().with_context("batch dims of " + shape::describe_input(i, C) +
                                          " vs the batch of A and B " + shape::dims_string(dims));
    dims = *with_c;
  }
  dims.push_back(M);
  dims.push_back(N);
  LR_ASSIGN_OR_RETURN(out[0], shape::make_desc(DType::f32, dims));
  return {};
}

}  // namespace

Status infer_matmul(const OpAttrs& attrs, std::span<const TensorDesc> in, std::span<TensorDesc> out) {
  return infer_matmul_impl(attrs, in, out).with_context("matmul");
}

}  // namespace longrun
