// Element access for the reference kernels: read any dtype as double, write double into
// any dtype, walk multi-indices, and broadcast offsets. Deliberately simple and slow: the
// reference kernels are the oracle.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include "longrun/dtype.h"
#include "longrun/ops/schema.h"
#include "longrun/tensor_desc.h"

namespace longrun::ref {

// Value of the element at `offset` (in elements) from view.data.
inline double load(const TensorView& v, int64_t offset) {
  const char* p = static_cast<const char*>(v.data) + offset * int64_t(dtype_size(v.desc.dtype()));
  switch (v.desc.dtype()) {
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::f16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return f16_to_f32(h);
    }
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bf16_to_f32(h);
    }
    case DType::i32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return double(i);
    }
    case DType::i64: {
      int64_t i;
      std::memcpy(&i, p, 8);
      return double(i);
    }
    case DType::u8: return double(*reinterpret_cast<const uint8_t*>(p));
    case DType::i8: return double(*reinterpret_cast<const int8_t*>(p));
  }
  return 0.0;
}

// Exact integer load (ids, indices); floats are truncated.
inline int64_t load_int(const TensorView& v, int64_t offset) {
  const char* p = static_cast<const char*>(v.data) + offset * int64_t(dtype_size(v.desc.dtype()));
  switch (v.desc.dtype()) {
    case DType::i32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case DType::i64: {
      int64_t i;
      std::memcpy(&i, p, 8);
      return i;
    }
    case DType::u8: return *reinterpret_cast<const uint8_t*>(p);
    case DType::i8: return *reinterpret_cast<const int8_t*>(p);
    default: return int64_t(load(v, offset));
  }
}

// Stores `x` rounded to the view's dtype (f32: nearest; f16/bf16: via f32, nearest even;
// integers: truncation toward zero).
inline void store(const TensorView& v, int64_t offset, double x) {
  char* p = static_cast<char*>(v.data) + offset * int64_t(dtype_size(v.desc.dtype()));
  switch (v.desc.dtype()) {
    case DType::f32: {
      float f = float(x);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::f16: {
      uint16_t h = f32_to_f16(float(x));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::bf16: {
      uint16_t h = f32_to_bf16(float(x));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::i32: {
      int32_t i = int32_t(x);
      std::memcpy(p, &i, 4);
      return;
    }
    case DType::i64: {
      int64_t i = int64_t(x);
      std::memcpy(p, &i, 8);
      return;
    }
    case DType::u8: *reinterpret_cast<uint8_t*>(p) = uint8_t(x); return;
    case DType::i8: *reinterpret_cast<int8_t*>(p) = int8_t(x); return;
  }
}

inline void store_int(const TensorView& v, int64_t offset, int64_t x) {
  char* p = static_cast<char*>(v.data) + offset * int64_t(dtype_size(v.desc.dtype()));
  switch (v.desc.dtype()) {
    case DType::i32: {
      int32_t i = int32_t(x);
      std::memcpy(p, &i, 4);
      return;
    }
    case DType::i64: std::memcpy(p, &x, 8); return;
    case DType::u8: *reinterpret_cast<uint8_t*>(p) = uint8_t(x); return;
    case DType::i8: *reinterpret_cast<int8_t*>(p) = int8_t(x); return;
    default: store(v, offset, double(x));
  }
}

// Element offset of `index` in `d` (index has d.rank() entries).
inline int64_t offset_of(const TensorDesc& d, std::span<const int64_t> index) {
  int64_t o = 0;
  for (int i = 0; i < d.rank(); ++i) o += index[size_t(i)] * d.stride(i);
  return o;
}

// Offset in `src` of the element that broadcasts to output index `out_index`
// (numpy rules: src is right-aligned; its dims of 1 repeat).
inline int64_t broadcast_offset(const TensorDesc& src, std::span<const int64_t> out_index) {
  const int shift = int(out_index.size()) - src.rank();
  int64_t o = 0;
  for (int i = 0; i < src.rank(); ++i)
    if (src.dim(i) != 1) o += out_index[size_t(i + shift)] * src.stride(i);
  return o;
}

// Calls fn(index) for every multi-index of `dims` in row-major order.
template <typename Fn>
void for_each_index(std::span<const int64_t> dims, Fn&& fn) {
  for (int64_t d : dims)
    if (d == 0) return;
  std::vector<int64_t> idx(dims.size(), 0);
  while (true) {
    fn(std::span<const int64_t>(idx));
    int i = int(dims.size()) - 1;
    for (; i >= 0; --i) {
      if (++idx[size_t(i)] < dims[size_t(i)]) break;
      idx[size_t(i)] = 0;
    }
    if (i < 0) return;
  }
}

// The "rows" of a tensor along one axis: calls fn(base_offset_in, base_offset_out) for
// every combination of the other axes, for kernels that work on 1-D lines (softmax, dct,
// cummax, topk, ...). `in` and `out` must have the same dims except along `axis`.
template <typename Fn>
void for_each_line(const TensorDesc& in, const TensorDesc& out, int axis, Fn&& fn) {
  std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
  dims[size_t(axis)] = 1;
  for_each_index(dims, [&](std::span<const int64_t> idx) { fn(offset_of(in, idx), offset_of(out, idx)); });
}

// "[1,0,3]": how run-time error messages name an element position.
inline std::string index_string(std::span<const int64_t> index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? "," : "") + std::to_string(index[i]);
  return s + "]";
}

// Re-checks a kernel call against the op's own shape inference: the attrs belong to the op,
// the input descs pass inference, every output view has the inferred dims and dtype (its
// strides may differ) and no non-empty view has a null pointer. The oracle then cannot index
// out of the views it was given, whoever calls it.
inline Status check_kernel_args(OpKind kind, const KernelArgs& a) {
  const std::string name(op_name(kind));
  if (a.attrs == nullptr) return invalid_argument(name + ": kernel called without attributes");
  std::vector<TensorDesc> in, out;
  for (const TensorView& v : a.inputs) in.push_back(v.desc);
  LR_RETURN_IF_ERROR(infer_op(kind, *a.attrs, in, &out));
  if (out.size() != a.outputs.size())
    return invalid_argument(name + ": expected " + std::to_string(out.size()) + " outputs, found " +
                            std::to_string(a.outputs.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const TensorDesc& d = a.outputs[i].desc;
    if (d.dtype() != out[i].dtype() || !d.same_shape(out[i]))
      return invalid_argument(name + ": output " + std::to_string(i) + " is " + d.to_string() +
                              ", expected " + out[i].to_string());
    if (a.outputs[i].data == nullptr && d.numel() > 0)
      return invalid_argument(name + ": output " + std::to_string(i) + " has no data");
  }
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (a.inputs[i].data == nullptr && a.inputs[i].desc.numel() > 0)
      return invalid_argument(name + ": input " + std::to_string(i) + " has no data");
  return {};
}

// Scalar activations, written exactly as attrs.h states them (shared by the elementwise
// kernels and the matmul epilogue so that both follow one definition).
inline double relu(double x) { return std::isnan(x) ? x : (x > 0.0 ? x : 0.0); }  // NaN propagates (torch)
inline double gelu_erf(double x) { return x * 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)); }
inline double gelu_tanh(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
inline double activate(Activation act, double x) {
  switch (act) {
    case Activation::none: return x;
    case Activation::relu: return relu(x);
    case Activation::gelu: return gelu_erf(x);
    case Activation::gelu_tanh: return gelu_tanh(x);
  }
  return x;
}

// The matmul epilogue in double (MatmulAttrs): act(alpha · acc + bias + beta · c), the bias
// and c terms only where the attrs have them. Shared by the reference matmul and the
// reference backend's int8 matmul (backends/reference/matmul_int8.cpp), whose acc is the
// dequantised int8 product.
inline double matmul_epilogue(const MatmulAttrs& at, double acc, double bias, double c) {
  double y = double(at.alpha) * acc;
  if (at.has_bias) y += bias;
  if (at.has_c) y += double(at.beta) * c;
  return activate(at.activation, y);
}

// Softmax of the logits in `line`, in place, max-subtracted. A -inf logit gets weight 0; a
// line whose logits are all -inf (or that is empty) becomes zeros, never NaN; a NaN logit
// makes the whole line NaN (as torch does).
inline void softmax_in_place(std::span<double> line) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : line) {
    if (std::isnan(x)) {
      for (double& y : line) y = std::numeric_limits<double>::quiet_NaN();
      return;
    }
    if (x > m) m = x;
  }
  if (m == -std::numeric_limits<double>::infinity()) {
    for (double& y : line) y = 0.0;
    return;
  }
  double sum = 0.0;
  for (double& y : line) {
    y = std::exp(y - m);
    sum += y;
  }
  for (double& y : line) y /= sum;
}

}  // namespace longrun::ref
