// Reference kernels of the elementwise ops: add, sub, mul (numpy broadcasting), scale, exp,
// tanh, relu, gelu, gelu_tanh and cast. Plain scalar loops in double: the oracle.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "longrun/ops/schema.h"
#include "reference/access.h"

namespace longrun {
namespace {

// Every output element is computed into a buffer before any is stored, so the kernels stay
// correct when the output aliases input 0 (schema inplace_input = 0), whatever the strides.
template <typename Fn>
void binary_kernel(const KernelArgs& a, Fn f) {
  const TensorView& x = a.inputs[0];
  const TensorView& y = a.inputs[1];
  const TensorView& out = a.outputs[0];
  std::vector<double> buf;
  ref::for_each_index(out.desc.dims(), [&](std::span<const int64_t> idx) {
    buf.push_back(f(ref::load(x, ref::broadcast_offset(x.desc, idx)),
                    ref::load(y, ref::broadcast_offset(y.desc, idx))));
  });
  size_t n = 0;
  ref::for_each_index(out.desc.dims(), [&](std::span<const int64_t> idx) {
    ref::store(out, ref::offset_of(out.desc, idx), buf[n++]);
  });
}

template <typename Fn>
void unary_kernel(const KernelArgs& a, Fn f) {
  const TensorView& x = a.inputs[0];
  const TensorView& out = a.outputs[0];
  std::vector<double> buf;
  ref::for_each_index(x.desc.dims(), [&](std::span<const int64_t> idx) {
    buf.push_back(f(ref::load(x, ref::offset_of(x.desc, idx))));
  });
  size_t n = 0;
  ref::for_each_index(out.desc.dims(), [&](std::span<const int64_t> idx) {
    ref::store(out, ref::offset_of(out.desc, idx), buf[n++]);
  });
}

// Value range [lo, hi] of an integer dtype.
void int_range(DType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case DType::i32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case DType::i64: *lo = INT64_MIN, *hi = INT64_MAX; return;
    default: *lo = 0, *hi = UINT8_MAX; return;  // u8
  }
}

std::string cast_error_prefix(const TensorView& x, std::span<const int64_t> idx) {
  return "cast: input 0 (" + x.desc.to_string() + ") element " + ref::index_string(idx) + ": ";
}

// One element of cast. Integers are read exactly (load_int) so that i64 values above 2^53
// are not rounded through double; int -> f16/bf16 goes through f32 like torch does.
Status cast_element(const TensorView& x, const TensorView& out, std::span<const int64_t> idx) {
  const DType from = x.desc.dtype(), to = out.desc.dtype();
  const int64_t src = ref::offset_of(x.desc, idx), dst = ref::offset_of(out.desc, idx);
  if (dtype_is_float(to)) {
    const double v = dtype_is_int(from) ? double(float(ref::load_int(x, src))) : ref::load(x, src);
    ref::store(out, dst, v);  // f32/f16/bf16 sources are exact in double; store rounds to `to`
    return {};
  }
  int64_t lo, hi;
  int_range(to, &lo, &hi);
  if (dtype_is_int(from)) {
    const int64_t v = ref::load_int(x, src);
    // Narrowing (i64 -> i32, negative -> u8) is an error rather than a silent wrap.
    if (v < lo || v > hi)
      return out_of_range(cast_error_prefix(x, idx) + "value " + std::to_string(v) + " out of range for " +
                          std::string(dtype_name(to)));
    ref::store_int(out, dst, v);
    return {};
  }
  const double v = ref::load(x, src);
  if (std::isnan(v))
    return invalid_argument(cast_error_prefix(x, idx) + "NaN cannot be cast to " +
                            std::string(dtype_name(to)));
  // float -> int truncates toward zero (C++ semantics). double(hi) + 1 evaluates to exactly
  // 256, 2^31 or 2^63, so the bound test is exact for every target.
  const double t = std::trunc(v);
  if (!(t >= double(lo) && t < double(hi) + 1.0))
    return out_of_range(cast_error_prefix(x, idx) + "value " + std::to_string(v) + " out of range for " +
                        std::string(dtype_name(to)));
  ref::store_int(out, dst, int64_t(t));
  return {};
}

}  // namespace

Status reference_add(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::add, a));
  binary_kernel(a, [](double x, double y) { return x + y; });
  return {};
}

Status reference_sub(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::sub, a));
  binary_kernel(a, [](double x, double y) { return x - y; });
  return {};
}

Status reference_mul(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::mul, a));
  binary_kernel(a, [](double x, double y) { return x * y; });
  return {};
}

Status reference_scale(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::scale, a));
  const ScaleAttrs& at = a.attr<ScaleAttrs>();
  const double s = at.scale, b = at.shift;
  unary_kernel(a, [s, b](double x) { return x * s + b; });
  return {};
}

Status reference_exp(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::exp, a));
  unary_kernel(a, [](double x) { return std::exp(x); });
  return {};
}

Status reference_tanh(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::tanh, a));
  unary_kernel(a, [](double x) { return std::tanh(x); });
  return {};
}

Status reference_relu(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::relu, a));
  unary_kernel(a, [](double x) { return ref::relu(x); });
  return {};
}

Status reference_gelu(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::gelu, a));
  unary_kernel(a, [](double x) { return ref::gelu_erf(x); });
  return {};
}

Status reference_gelu_tanh(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::gelu_tanh, a));
  unary_kernel(a, [](double x) { return ref::gelu_tanh(x); });
  return {};
}

// cast does not run in place (schema inplace_input = -1): element sizes may differ.
Status reference_cast(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::cast, a));
  Status st;
  ref::for_each_index(a.inputs[0].desc.dims(), [&](std::span<const int64_t> idx) {
    if (st.ok()) st = cast_element(a.inputs[0], a.outputs[0], idx);
  });
  return st;
}

}  // namespace longrun
