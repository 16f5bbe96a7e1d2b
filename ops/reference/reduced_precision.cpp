// The scalar definitions of reduced-precision matmul (longrun/ops/reduced_precision.h).
#include "longrun/ops/reduced_precision.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <string>

namespace longrun::ops {

LinearWeight linear_weight_layout(const MatmulAttrs& at, std::span<const TensorDesc> in,
                                  const TensorDesc& out) {
  if (at.trans_a || in.size() != size_t(2 + at.has_bias + at.has_c)) return LinearWeight::none;
  const TensorDesc& x = in[0];
  const TensorDesc& w = in[1];
  if (x.dtype() != DType::f32 || out.dtype() != DType::f32 || x.rank() < 2 || w.rank() != 2)
    return LinearWeight::none;
  if (w.dtype() != DType::f32 && w.dtype() != DType::f16 && w.dtype() != DType::bf16 &&
      w.dtype() != DType::i8)
    return LinearWeight::none;
  if (!x.is_contiguous() || !out.is_contiguous() || !w.is_contiguous()) return LinearWeight::none;
  const int64_t K = x.dim(x.rank() - 1);
  const int64_t N = at.trans_b ? w.dim(0) : w.dim(1);
  if ((at.trans_b ? w.dim(1) : w.dim(0)) != K || K == 0 || K > s8::kMaxK || out.rank() != x.rank() ||
      out.dim(out.rank() - 1) != N)
    return LinearWeight::none;
  for (int i = 0; i + 1 < x.rank(); ++i)
    if (out.dim(i) != x.dim(i)) return LinearWeight::none;
  size_t next = 2;
  if (at.has_bias) {
    const TensorDesc& b = in[next++];
    if (b.dtype() != DType::f32 || b.rank() != 1 || b.dim(0) != N || !b.is_contiguous())
      return LinearWeight::none;
  }
  if (at.has_c) {
    const TensorDesc& c = in[next];
    if (c.dtype() != DType::f32 || !c.is_contiguous() || !std::ranges::equal(c.dims(), out.dims()))
      return LinearWeight::none;
  }
  return at.trans_b ? LinearWeight::nk : LinearWeight::kn;
}

namespace s8 {
namespace {

// A row's quantization scale: max|x| / 127; NaN when the row holds an infinity or a NaN.
float row_scale(const float* x, int64_t cols) {
  float mx = 0.0f;
  for (int64_t k = 0; k < cols; ++k) {
    const float ax = std::fabs(x[k]);
    if (!(ax < std::numeric_limits<float>::infinity())) return std::numeric_limits<float>::quiet_NaN();
    mx = ax > mx ? ax : mx;
  }
  return mx / float(kQMax);
}

}  // namespace

float round_half_even(float x) {
  float f = std::floor(x);
  const float d = x - f;  // exact: |x| <= 2^22
  if (d > 0.5f || (d == 0.5f && (int64_t(f) & 1) != 0)) f += 1.0f;
  return f;
}

void quantize_rows_reference(const float* src, int64_t rows, int64_t cols, int64_t ld, int8_t* q, int64_t ldq,
                             float* scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = src + r * ld;
    int8_t* qr = q + r * ldq;
    const float s = row_scale(x, cols);
    scale[r] = s;
    if (!(s > 0.0f)) {  // zero, or NaN: no value to quantize
      std::fill(qr, qr + cols, int8_t(0));
      continue;
    }
    for (int64_t k = 0; k < cols; ++k) {
      const float v = std::min(std::max(x[k] / s, -float(kQMax)), float(kQMax));
      qr[k] = int8_t(round_half_even(v));
    }
  }
}

Result<QuantizedWeight> quantize_weight(const void* w, DType dtype, LinearWeight layout, int64_t n,
                                        int64_t k) {
  if (n < 0 || k < 0 || (n > 0 && k > 0 && w == nullptr))
    return invalid_argument("int8 weight: dimensions [" + std::to_string(n) + ", " + std::to_string(k) +
                            "] are not a valid matrix");
  if (k > kMaxK)
    return invalid_argument("int8 weight: K = " + std::to_string(k) + " exceeds " + std::to_string(kMaxK) +
                            ", the most whose int32 sums are exact");
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    return invalid_argument("int8 weight: dtype " + std::string(dtype_name(dtype)) +
                            ", expected f32, f16 or bf16");
  if (layout == LinearWeight::none) return invalid_argument("int8 weight: not a linear layer's weight");
  QuantizedWeight qw;
  qw.n = n;
  qw.k = k;
  std::vector<float> row;
  try {
    qw.q.assign(size_t(n * k), 0);
    qw.scale.assign(size_t(n), 0.0f);
    row.resize(size_t(k));
  } catch (const std::bad_alloc&) {
    return out_of_memory("int8 weight: cannot allocate [" + std::to_string(n) + ", " + std::to_string(k) +
                         "] int8");
  }
  // Channel c's K values, gathered and widened into `row`, then quantized as one row.
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t at = layout == LinearWeight::nk ? c * k + j : j * n + c;
      row[size_t(j)] = float_element(w, dtype, at);
      if (!std::isfinite(row[size_t(j)]))
        return invalid_argument("int8 weight: element [" +
                                (layout == LinearWeight::nk ? std::to_string(c) + ", " + std::to_string(j)
                                                            : std::to_string(j) + ", " + std::to_string(c)) +
                                "] is " + std::to_string(row[size_t(j)]) + ", expected a finite value");
    }
    quantize_rows_reference(row.data(), 1, k, k, qw.q.data() + c * k, k, qw.scale.data() + c);
  }
  return qw;
}

void gemm_s8_reference(const int8_t* qa, int64_t ldqa, const float* sa, int64_t m, const QuantizedWeight& w,
                       float* y, int64_t ldy) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < w.n; ++j) {
      int32_t acc = 0;
      const int8_t* ar = qa + i * ldqa;
      const int8_t* wr = w.q.data() + j * w.k;
      for (int64_t k = 0; k < w.k; ++k) acc += int32_t(ar[k]) * int32_t(wr[k]);
      const float s = sa[i] * w.scale[size_t(j)];
      y[i * ldy + j] = float(acc) * s;
    }
}

bool scales_match(const ChannelScales& s, LinearWeight layout, int64_t n, int64_t k) {
  if (layout == LinearWeight::none) return false;
  return s.data != nullptr && s.channels == n && s.stride == (layout == LinearWeight::nk ? k : 1);
}

Result<QuantizedWeight> stored_weight(const Value& w, LinearWeight layout, int64_t n, int64_t k) {
  if (w.desc.dtype() != DType::i8 || w.weight_data == nullptr || !scales_match(w.scales, layout, n, k) ||
      w.desc.numel() != n * k)
    return format_error("quantized weight '" + w.name + "' " + w.desc.to_string() + ": its scales are " +
                        std::to_string(w.scales.channels) + " channels of stride " +
                        std::to_string(w.scales.stride) + ", but the graph uses it as a linear layer " +
                        (layout == LinearWeight::nk ? "nk" : "kn") + " with " + std::to_string(n) +
                        " channels of " + std::to_string(k) + " (stride " +
                        std::to_string(layout == LinearWeight::nk ? k : 1) + ")");
  const auto* q = static_cast<const int8_t*>(w.weight_data);
  QuantizedWeight qw;
  qw.n = n;
  qw.k = k;
  try {
    qw.scale.assign(w.scales.data, w.scales.data + n);
    qw.q.resize(size_t(n * k));
  } catch (const std::bad_alloc&) {
    return out_of_memory("quantized weight '" + w.name + "': cannot allocate [" + std::to_string(n) + ", " +
                         std::to_string(k) + "] int8");
  }
  if (layout == LinearWeight::nk) {
    std::copy(q, q + n * k, qw.q.begin());
  } else {
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < n; ++c) qw.q[size_t(c * k + j)] = q[j * n + c];
  }
  return qw;
}

}  // namespace s8

Result<std::vector<float>> dequantized_copy(const Value& w) {
  if (w.desc.dtype() != DType::i8 || !scales_tile(w.desc, w.scales))
    return internal_error("dequantized_copy: '" + w.name + "' " + w.desc.to_string() +
                          " is not a quantized weight");
  std::vector<float> out;
  try {
    out.resize(size_t(w.desc.numel()));
  } catch (const std::bad_alloc&) {
    return out_of_memory("quantized weight '" + w.name + "': cannot allocate " +
                         std::to_string(w.desc.numel() * 4) + " bytes for its f32 values");
  }
  dequantize_weight(w, out.data());
  return out;
}

}  // namespace longrun::ops

namespace longrun::ops::bf16 {

Result<RoundedWeight> round_weight(const void* w, DType dtype, LinearWeight layout, int64_t n, int64_t k) {
  if (n < 0 || k < 0 || (n > 0 && k > 0 && w == nullptr))
    return invalid_argument("bf16 weight: dimensions [" + std::to_string(n) + ", " + std::to_string(k) +
                            "] are not a valid matrix");
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    return invalid_argument("bf16 weight: dtype " + std::string(dtype_name(dtype)) +
                            ", expected f32, f16 or bf16");
  if (layout == LinearWeight::none) return invalid_argument("bf16 weight: not a linear layer's weight");
  int64_t elems = 0;
  if (__builtin_mul_overflow(n, k, &elems) || elems > (int64_t(1) << 40))
    return invalid_argument("bf16 weight: [" + std::to_string(n) + ", " + std::to_string(k) +
                            "] is too large");
  RoundedWeight r;
  r.n = n;
  r.k = k;
  try {
    r.w.assign(size_t(elems), 0);
  } catch (const std::bad_alloc&) {
    return out_of_memory("bf16 weight: cannot allocate [" + std::to_string(n) + ", " + std::to_string(k) +
                         "] bf16");
  }
  for (int64_t c = 0; c < n; ++c)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t at = layout == LinearWeight::nk ? c * k + j : j * n + c;
      r.w[size_t(c * k + j)] = dtype == DType::bf16 ? static_cast<const uint16_t*>(w)[at]
                                                    : f32_to_bf16(float_element(w, dtype, at));
    }
  return r;
}

void gemm_bf16_reference(const float* x, int64_t ldx, int64_t rows, const RoundedWeight& w, float* y,
                         int64_t ldy) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < w.n; ++j) {
      double acc = 0.0;
      const float* xr = x + i * ldx;
      const uint16_t* wr = w.w.data() + j * w.k;
      for (int64_t k = 0; k < w.k; ++k) acc += double(round(xr[k])) * double(bf16_to_f32(wr[k]));
      y[i * ldy + j] = float(acc);
    }
}

}  // namespace longrun::ops::bf16
