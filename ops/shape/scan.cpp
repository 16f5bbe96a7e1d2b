// Shape/dtype inference for the scan and pooling ops along one axis: cummax, cumsum,
// segment_max, upsample_nearest (semantics in attrs.h; Combiner uses cummax, cumsum and
// segment_max, docs/models.md#combiner-mixture, the pad-aware positions cumsum, and Fourier-BART's global
// residual upsample_nearest, docs/models.md#fourier-bart).
#include <array>
#include <string>

#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {
namespace {

Result<TensorDesc> resized_along(const TensorDesc& x, int axis, int64_t len) {
  std::array<int64_t, kMaxRank> dims{};
  for (int i = 0; i < x.rank(); ++i) dims[size_t(i)] = x.dim(i);
  dims[size_t(axis)] = len;
  return shape::make_desc(x.dtype(), std::span<const int64_t>(dims.data(), size_t(x.rank())));
}

// The running scans (cummax, cumsum): f32 in, f32 of the same dims out, a valid axis.
Status infer_f32_scan(int axis, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_RETURN_IF_ERROR(shape::resolve_axis(0, x, axis).status());
  LR_ASSIGN_OR_RETURN(outputs[0], shape::make_desc(DType::f32, x.dims()));
  return {};
}

}  // namespace

Status infer_cummax(const OpAttrs& attrs, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  return infer_f32_scan(std::get<CummaxAttrs>(attrs).axis, inputs, outputs);
}

Status infer_cumsum(const OpAttrs& attrs, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  return infer_f32_scan(std::get<CumsumAttrs>(attrs).axis, inputs, outputs);
}

Status infer_segment_max(const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                         std::span<TensorDesc> outputs) {
  const auto& a = std::get<SegmentMaxAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_ASSIGN_OR_RETURN(const int axis, shape::resolve_axis(0, x, a.axis));
  if (a.segment < 1)
    return invalid_argument("segment " + std::to_string(a.segment) + " for " + shape::describe_input(0, x) +
                            ": expected >= 1");
  const int64_t n = x.dim(axis);
  // ceil(n / segment) without the n + segment - 1 overflow.
  const int64_t segments = n / a.segment + (n % a.segment != 0 ? 1 : 0);
  LR_ASSIGN_OR_RETURN(outputs[0], resized_along(x, axis, segments));
  return {};
}

Status infer_upsample_nearest(const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                              std::span<TensorDesc> outputs) {
  const auto& a = std::get<UpsampleNearestAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_ASSIGN_OR_RETURN(const int axis, shape::resolve_axis(0, x, a.axis));
  if (a.size < 1)
    return invalid_argument("size " + std::to_string(a.size) + " for " + shape::describe_input(0, x) +
                            ": expected >= 1");
  // Every output position copies some input position, so the input axis cannot be empty.
  if (x.dim(axis) < 1)
    return invalid_argument(shape::describe_input(0, x) + ": length along axis " + std::to_string(axis) +
                            " must be >= 1, found 0");
  LR_ASSIGN_OR_RETURN(outputs[0], resized_along(x, axis, a.size));
  return {};
}

}  // namespace longrun
