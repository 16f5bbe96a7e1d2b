// Shape/dtype inference for the top-k selection ops: topk_mask, topk_indices, matmul_topk
// (semantics in attrs.h; used by Lasformer's per-row key selection, docs/models.md#lasformer).
#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {

Status infer_topk_mask(const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                       std::span<TensorDesc> outputs) {
  const auto& a = std::get<TopkMaskAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_RETURN_IF_ERROR(shape::resolve_axis(0, x, a.axis).status());
  // k larger than the row is clamped (documented), but k < 1 is a caller mistake.
  if (a.k < 1)
    return invalid_argument("k " + std::to_string(a.k) + " for " + shape::describe_input(0, x) +
                            ": expected >= 1");
  LR_ASSIGN_OR_RETURN(outputs[0], shape::make_desc(a.output_scores ? DType::f32 : DType::u8, x.dims()));
  return {};
}

Status infer_topk_indices(const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                          std::span<TensorDesc> outputs) {
  const auto& a = std::get<TopkIndicesAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_ASSIGN_OR_RETURN(const int axis, shape::resolve_axis(0, x, a.axis));
  const int64_t n = x.dim(axis);
  // Unlike topk_mask the output has exactly k slots per row, so k cannot exceed the row.
  if (a.k < 1 || a.k > n)
    return invalid_argument("k " + std::to_string(a.k) + " out of range for " + shape::describe_input(0, x) +
                            ": expected 1 .. " + std::to_string(n) + " (the length of axis " +
                            std::to_string(axis) + ")");
  // The indices are i32: the largest one, n - 1, must fit.
  if (n - 1 > int64_t(std::numeric_limits<int32_t>::max()))
    return out_of_range(shape::describe_input(0, x) + ": axis length " + std::to_string(n) +
                        " does not fit i32 indices");
  std::array<int64_t, kMaxRank> dims{};
  for (int i = 0; i < x.rank(); ++i) dims[size_t(i)] = x.dim(i);
  dims[size_t(axis)] = a.k;
  LR_ASSIGN_OR_RETURN(outputs[0],
                      shape::make_desc(DType::i32, std::span<const int64_t>(dims.data(), size_t(x.rank()))));
  return {};
}

Status infer_matmul_topk(const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                         std::span<TensorDesc> outputs) {
  const auto& a = std::get<MatmulTopkAttrs>(attrs);
  const size_t want = 2 + (a.has_key_mask ? 1 : 0) + (a.has_row_k ? 1 : 0);
  if (inputs.size() != want)
    return invalid_argument("matmul_topk: " + std::to_string(inputs.size()) + " inputs, expected " +
                            std::to_string(want) + " (A, B" + (a.has_key_mask ? ", key_mask" : "") +
                            (a.has_row_k ? ", row_k" : "") + ")");
  const TensorDesc& q = inputs[0];
  const TensorDesc& k = inputs[1];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, q, {DType::f32}));
  LR_RETURN_IF_ERROR(shape::expect_dtype(1, k, {DType::f32}));
  LR_RETURN_IF_ERROR(shape::expect_rank(0, q, 3, 3));
  LR_RETURN_IF_ERROR(shape::expect_rank(1, k, 3, 3));
  LR_RETURN_IF_ERROR(shape::expect_dim(1, k, 0, q.dim(0), "batch"));
  LR_RETURN_IF_ERROR(shape::expect_dim(1, k, 2, q.dim(2), "d"));
  const int64_t batch = q.dim(0), m = q.dim(1), nk = k.dim(1);
  if (a.k < 1 || a.k > nk)
    return invalid_argument("matmul_topk: k " + std::to_string(a.k) + " out of range for " +
                            shape::describe_input(1, k) + ": expected 1 .. " + std::to_string(nk) +
                            " (the number of columns)");
  if (nk - 1 > int64_t(std::numeric_limits<int32_t>::max()))
    return out_of_range(shape::describe_input(1, k) + ": " + std::to_string(nk) +
                        " columns do not fit i32 indices");
  // Inputs 2 and 3 are [B or 1, Nk] and [B or 1, M or 1]: a dim of 1 is shared.
  auto expect_rows = [&](int index, DType dtype, int64_t cols, bool cols_may_broadcast,
                         const char* what) -> Status {
    const TensorDesc& t = inputs[size_t(index)];
    LR_RETURN_IF_ERROR(shape::expect_dtype(index, t, {dtype}));
    LR_RETURN_IF_ERROR(shape::expect_rank(index, t, 2, 2));
    if (t.dim(0) != 1) LR_RETURN_IF_ERROR(shape::expect_dim(index, t, 0, batch, "batch (or 1)"));
    if (!(cols_may_broadcast && t.dim(1) == 1))
      LR_RETURN_IF_ERROR(shape::expect_dim(index, t, 1, cols, what));
    return {};
  };
  int next = 2;
  if (a.has_key_mask) LR_RETURN_IF_ERROR(expect_rows(next++, DType::u8, nk, false, "Nk"));
  if (a.has_row_k) LR_RETURN_IF_ERROR(expect_rows(next, DType::i32, m, true, "M (or 1)"));
  const std::array<int64_t, 3> dims{batch, m, a.k};
  LR_ASSIGN_OR_RETURN(outputs[0], shape::make_desc(DType::i32, dims));
  return {};
}

}  // namespace longrun
