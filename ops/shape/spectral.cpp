// Shape/dtype inference for the spectral ops: dct, idct, spectral_filter (semantics in
// attrs.h; the filter is docs/models.md#spectral-filter). All three compute in f32 and change only the
// length of the transformed axis.
#include <array>
#include <string>

#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {
namespace {

// `x` with dims[axis] replaced by `len`, contiguous f32.
Result<TensorDesc> resized_along(const TensorDesc& x, int axis, int64_t len) {
  std::array<int64_t, kMaxRank> dims{};
  for (int i = 0; i < x.rank(); ++i) dims[size_t(i)] = x.dim(i);
  dims[size_t(axis)] = len;
  return shape::make_desc(DType::f32, std::span<const int64_t>(dims.data(), size_t(x.rank())));
}

// The transformed axis must hold at least one sample: a length-0 DCT has no definition.
Status expect_nonempty_axis(const TensorDesc& x, int axis) {
  if (x.dim(axis) >= 1) return {};
  return invalid_argument(shape::describe_input(0, x) + ": transform length along axis " +
                          std::to_string(axis) + " must be >= 1, found 0");
}

}  // namespace

Status infer_dct(const OpAttrs& attrs, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  const auto& a = std::get<DctAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_ASSIGN_OR_RETURN(const int axis, shape::resolve_axis(0, x, a.axis));
  LR_RETURN_IF_ERROR(expect_nonempty_axis(x, axis));
  const int64_t n = x.dim(axis);
  if (a.keep < 0 || a.keep > n)
    return invalid_argument("keep " + std::to_string(a.keep) + " out of range for " +
                            shape::describe_input(0, x) + ": expected 0 (all) .. " + std::to_string(n) +
                            " (the length of axis " + std::to_string(axis) + ")");
  LR_ASSIGN_OR_RETURN(outputs[0], resized_along(x, axis, a.keep == 0 ? n : a.keep));
  return {};
}

Status infer_idct(const OpAttrs& attrs, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  const auto& a = std::get<IdctAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_ASSIGN_OR_RETURN(const int axis, shape::resolve_axis(0, x, a.axis));
  if (a.n < 0)
    return invalid_argument("n " + std::to_string(a.n) + " is negative for " + shape::describe_input(0, x) +
                            ": expected 0 (input length) or a length >= 1");
  // With an explicit n the input is truncated or zero-padded, so only n = 0 needs a
  // non-empty input axis.
  if (a.n == 0) LR_RETURN_IF_ERROR(expect_nonempty_axis(x, axis));
  LR_ASSIGN_OR_RETURN(outputs[0], resized_along(x, axis, a.n == 0 ? x.dim(axis) : a.n));
  return {};
}

Status infer_spectral_filter(const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                             std::span<TensorDesc> outputs) {
  const auto& a = std::get<SpectralFilterAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, x, {DType::f32}));
  LR_ASSIGN_OR_RETURN(const int axis, shape::resolve_axis(0, x, a.axis));
  LR_RETURN_IF_ERROR(expect_nonempty_axis(x, axis));
  if (a.keep < 1)
    return invalid_argument("keep " + std::to_string(a.keep) + " for " + shape::describe_input(0, x) +
                            ": expected >= 1");
  if (a.method != SpectralMethod::automatic && a.method != SpectralMethod::fft &&
      a.method != SpectralMethod::matrix)
    return invalid_argument("method " + std::to_string(int(a.method)) + " is not a SpectralMethod");
  // keep > N is allowed and caps at N, like the official code's slice X[0:M] (docs/models.md#lra-encoder).
  const int64_t m = a.keep < x.dim(axis) ? a.keep : x.dim(axis);
  LR_ASSIGN_OR_RETURN(outputs[0], resized_along(x, axis, m));
  return {};
}

}  // namespace longrun
