// Shape/dtype inference for the layout ops: concat, slice, pad, transpose, reshape, roll,
// where. They move elements without arithmetic, so every dtype is accepted (where's
// condition is u8). Outputs are contiguous.
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "longrun/checked_math.h"
#include "longrun/ops/schema.h"
#include "shape/shape_util.h"

namespace longrun {
namespace {

using Dims = std::array<int64_t, kMaxRank>;

Dims dims_of(const TensorDesc& x) {
  Dims d{};
  for (int i = 0; i < x.rank(); ++i) d[size_t(i)] = x.dim(i);
  return d;
}

Result<TensorDesc> contiguous(DType t, const Dims& dims, int rank) {
  return shape::make_desc(t, std::span<const int64_t>(dims.data(), size_t(rank)));
}

std::string dims_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// The pad value is stored into the tensor's dtype; for integer dtypes it must convert
// exactly, since a silently truncated or wrapped fill value is never what was meant.
Status expect_representable(const TensorDesc& x, float value) {
  double lo = 0, hi = 0;
  switch (x.dtype()) {
    case DType::i32: lo = -2147483648.0, hi = 2147483647.0; break;
    case DType::i64: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
    case DType::u8: lo = 0, hi = 255; break;
    case DType::i8: lo = -128, hi = 127; break;
    default: return {};
  }
  const double v = value;
  // hi of i64 rounds up to 2^63 as a double, hence the strict comparison there.
  const bool in_range = v >= lo && (x.dtype() == DType::i64 ? v < hi : v <= hi);
  if (std::isfinite(v) && v == std::trunc(v) && in_range) return {};
  return invalid_argument("value " + std::to_string(value) + " is not representable in " +
                          shape::describe_input(0, x));
}

}  // namespace

Status infer_concat(const OpAttrs& attrs, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  const auto& a = std::get<ConcatAttrs>(attrs);
  const TensorDesc& x0 = inputs[0];
  LR_ASSIGN_OR_RETURN(const int axis, shape::resolve_axis(0, x0, a.axis));
  Dims out = dims_of(x0);
  for (size_t j = 1; j < inputs.size(); ++j) {
    const TensorDesc& xj = inputs[j];
    const int idx = int(j);
    if (xj.dtype() != x0.dtype())
      return invalid_argument(shape::describe_input(idx, xj) + ": expected dtype " +
                              std::string(dtype_name(x0.dtype())) + " (as input 0), found " +
                              std::string(dtype_name(xj.dtype())));
    if (xj.rank() != x0.rank())
      return invalid_argument(shape::describe_input(idx, xj) + ": expected rank " +
                              std::to_string(x0.rank()) + " (as input 0), found " +
                              std::to_string(xj.rank()));
    for (int i = 0; i < x0.rank(); ++i) {
      if (i != axis && xj.dim(i) != x0.dim(i))
        return invalid_argument(shape::describe_input(idx, xj) + ": dim " + std::to_string(i) + " expected " +
                                std::to_string(x0.dim(i)) + " (as input 0), found " +
                                std::to_string(xj.dim(i)));
    }
    if (!checked_add(out[size_t(axis)], xj.dim(axis), &out[size_t(axis)]))
      return overflow_error("concatenated length along axis " + std::to_string(axis) + " overflows");
  }
  LR_ASSIGN_OR_RETURN(outputs[0], contiguous(x0.dtype(), out, x0.rank()));
  return {};
}

Status infer_slice(const OpAttrs& attrs, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  const auto& a = std::get<SliceAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::resolve_axis(0, x, a.axis).status());
  if (a.step < 1)
    return invalid_argument("step " + std::to_string(a.step) + " for " + shape::describe_input(0, x) +
                            ": expected >= 1");
  // TensorDesc::slice implements the Python clamping; only its dims are used here.
  int64_t offset = 0;
  LR_ASSIGN_OR_RETURN(const TensorDesc view, x.slice(a.axis, a.start, a.end, a.step, &offset));
  LR_ASSIGN_OR_RETURN(outputs[0], shape::make_desc(x.dtype(), view.dims()));
  return {};
}

Status infer_pad(const OpAttrs& attrs, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  const auto& a = std::get<PadAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_ASSIGN_OR_RETURN(const int axis, shape::resolve_axis(0, x, a.axis));
  // Negative padding (cropping, as torch allows) is what slice is for.
  if (a.before < 0 || a.after < 0)
    return invalid_argument("padding before=" + std::to_string(a.before) +
                            " after=" + std::to_string(a.after) + " for " + shape::describe_input(0, x) +
                            ": expected both >= 0");
  LR_RETURN_IF_ERROR(expect_representable(x, a.value));
  Dims out = dims_of(x);
  int64_t len = 0;
  if (!checked_add(x.dim(axis), a.before, &len) || !checked_add(len, a.after, &len))
    return overflow_error("padded length along axis " + std::to_string(axis) + " of " +
                          shape::describe_input(0, x) + " overflows");
  out[size_t(axis)] = len;
  LR_ASSIGN_OR_RETURN(outputs[0], contiguous(x.dtype(), out, x.rank()));
  return {};
}

Status infer_transpose(const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                       std::span<TensorDesc> outputs) {
  const auto& a = std::get<TransposeAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  if (a.rank != x.rank())
    return invalid_argument("perm has " + std::to_string(a.rank) + " entries for " +
                            shape::describe_input(0, x) + ": expected " + std::to_string(x.rank()));
  Dims out{};
  bool seen[kMaxRank] = {};
  for (int i = 0; i < a.rank; ++i) {
    const int p = a.perm[size_t(i)];
    if (p < 0 || p >= a.rank || seen[p]) {
      std::string perm;
      for (int j = 0; j < a.rank; ++j) perm += (j ? "," : "") + std::to_string(a.perm[size_t(j)]);
      return invalid_argument("perm [" + perm + "] is not a permutation of 0.." + std::to_string(a.rank - 1) +
                              " for " + shape::describe_input(0, x));
    }
    seen[p] = true;
    out[size_t(i)] = x.dim(p);
  }
  LR_ASSIGN_OR_RETURN(outputs[0], contiguous(x.dtype(), out, x.rank()));
  return {};
}

Status infer_reshape(const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                     std::span<TensorDesc> outputs) {
  const auto& a = std::get<ReshapeAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  if (a.rank < 0 || a.rank > kMaxRank)
    return invalid_argument("target rank " + std::to_string(a.rank) + " for " + shape::describe_input(0, x) +
                            ": expected 0.." + std::to_string(kMaxRank));
  const std::span<const int64_t> target(a.dims.data(), size_t(a.rank));
  // The element order is row-major whatever the input strides are (the reference kernel
  // copies; the planner makes it a view only for contiguous inputs), so the element-count
  // check runs on the contiguous form of the input.
  Result<TensorDesc> r = TensorDesc(x.dtype(), x.dims()).reshape(target);
  if (!r.ok()) {
    std::string m = r.status().message();
    if (m.rfind("reshape: ", 0) == 0) m.erase(0, 9);
    return Status(r.status().code(), shape::describe_input(0, x) + " to " + dims_string(target) + ": " + m);
  }
  outputs[0] = *r;
  return {};
}

Status infer_roll(const OpAttrs& attrs, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  const auto& a = std::get<RollAttrs>(attrs);
  const TensorDesc& x = inputs[0];
  LR_RETURN_IF_ERROR(shape::resolve_axis(0, x, a.axis).status());
  LR_ASSIGN_OR_RETURN(outputs[0], shape::make_desc(x.dtype(), x.dims()));
  return {};
}

Status infer_where(const OpAttrs&, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs) {
  const TensorDesc& cond = inputs[0];
  const TensorDesc& a = inputs[1];
  const TensorDesc& b = inputs[2];
  LR_RETURN_IF_ERROR(shape::expect_dtype(0, cond, {DType::u8}));
  if (b.dtype() != a.dtype())
    return invalid_argument(shape::describe_input(2, b) + ": expected dtype " +
                            std::string(dtype_name(a.dtype())) + " (as input 1), found " +
                            std::string(dtype_name(b.dtype())));
  Result<std::vector<int64_t>> ab = shape::broadcast_dims(a.dims(), b.dims());
  if (!ab.ok())
    return invalid_argument(shape::describe_input(1, a) + " and " + shape::describe_input(2, b) + ": " +
                            ab.status().message());
  Result<std::vector<int64_t>> all = shape::broadcast_dims(cond.dims(), *ab);
  if (!all.ok())
    return invalid_argument(shape::describe_input(0, cond) + " and the value shape " + dims_string(*ab) +
                            ": " + all.status().message());
  LR_ASSIGN_OR_RETURN(outputs[0], shape::make_desc(a.dtype(), *all));
  return {};
}

}  // namespace longrun
