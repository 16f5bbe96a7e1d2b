// Shape/dtype inference for the top-k selection ops: topk_mask, topk_indices (semantics in
// attrs.h; used by Lasformer's per-row key selection, docs/models.md#lasformer).
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

}  // namespace longrun
