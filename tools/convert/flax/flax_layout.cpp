// Flax -> PyTorch layout helpers: reshape + 2-D transpose of raw elements.
#include "flax_layout.h"

#include <cstring>
#include <new>

#include "longrun/checked_math.h"

namespace longrun::checkpoint {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

Status rank_error(std::string_view name, std::string_view expected, const FlaxTensor& x) {
  return invalid_argument("flax tensor '" + std::string(name) + "': expected " + std::string(expected) +
                          ", found shape " + shape_str(x.shape));
}

template <typename Elem>
void transpose_elems(const std::byte* src, std::byte* dst, int64_t rows, int64_t cols) {
  // Tiles keep both the reads and the writes within a few cache lines.
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
        for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) {
          Elem e;
          std::memcpy(&e, src + size_t(r * cols + c) * sizeof(Elem), sizeof(Elem));
          std::memcpy(dst + size_t(c * rows + r) * sizeof(Elem), &e, sizeof(Elem));
        }
}

// [rows, cols] row-major -> [cols, rows], into a new owned tensor.
Result<FlaxTensor> transpose_2d(const FlaxTensor& x, int64_t rows, int64_t cols, std::string_view name) {
  FlaxTensor out;
  out.dtype = x.dtype;
  out.shape = {cols, rows};
  try {
    auto buf = std::make_shared<std::vector<std::byte>>(x.bytes.size());
    switch (flax_dtype_size(x.dtype)) {
      case 1: transpose_elems<uint8_t>(x.bytes.data(), buf->data(), rows, cols); break;
      case 2: transpose_elems<uint16_t>(x.bytes.data(), buf->data(), rows, cols); break;
      case 4: transpose_elems<uint32_t>(x.bytes.data(), buf->data(), rows, cols); break;
      default: transpose_elems<uint64_t>(x.bytes.data(), buf->data(), rows, cols); break;
    }
    out.bytes = *buf;
    out.owned = std::move(buf);
  } catch (const std::bad_alloc&) {
    return out_of_memory("flax tensor '" + std::string(name) + "': cannot allocate " +
                         std::to_string(x.bytes.size()) + " bytes for the transpose");
  }
  return out;
}

}  // namespace

Result<FlaxTensor> kernel_to_torch_weight(const FlaxTensor& kernel, size_t in_axes, std::string_view name) {
  if (in_axes < 1 || in_axes >= kernel.shape.size())
    return rank_error(name, "a kernel with more than " + std::to_string(in_axes) + " axes", kernel);
  int64_t rows = 0, cols = 0;
  const std::span<const int64_t> dims(kernel.shape);
  if (!checked_product(dims.first(in_axes), &rows) || !checked_product(dims.subspan(in_axes), &cols))
    return overflow_error("flax tensor '" + std::string(name) + "': element count overflows");
  if (uint64_t(rows) * uint64_t(cols) * flax_dtype_size(kernel.dtype) != kernel.bytes.size())
    return invalid_argument("flax tensor '" + std::string(name) + "': byte size disagrees with shape " +
                            shape_str(kernel.shape));
  return transpose_2d(kernel, rows, cols, name);
}

Result<FlaxTensor> dense_kernel_to_torch(const FlaxTensor& kernel, std::string_view name) {
  if (kernel.shape.size() != 2) return rank_error(name, "a Dense kernel [in, out]", kernel);
  return kernel_to_torch_weight(kernel, 1, name);
}

Result<FlaxTensor> heads_in_kernel_to_torch(const FlaxTensor& kernel, std::string_view name) {
  if (kernel.shape.size() < 3)
    return rank_error(name, "a DenseGeneral kernel [D, ..., heads, head_dim]", kernel);
  return kernel_to_torch_weight(kernel, 1, name);
}

Result<FlaxTensor> heads_out_kernel_to_torch(const FlaxTensor& kernel, std::string_view name) {
  if (kernel.shape.size() != 3)
    return rank_error(name, "a DenseGeneral kernel [heads, head_dim, out]", kernel);
  return kernel_to_torch_weight(kernel, 2, name);
}

Result<FlaxTensor> flatten_bias(const FlaxTensor& bias, std::string_view name) {
  if (bias.shape.empty()) return rank_error(name, "a bias of rank >= 1", bias);
  FlaxTensor out = bias;
  const int64_t n = bias.numel();
  if (n < 0) return overflow_error("flax tensor '" + std::string(name) + "': element count overflows");
  out.shape = {n};
  return out;
}

Result<FlaxTensor> embed_to_torch(const FlaxTensor& embedding, std::string_view name) {
  if (embedding.shape.size() != 2) return rank_error(name, "an Embed table [vocab, features]", embedding);
  return embedding;
}

Result<FlaxTensor> layer_norm_param_to_torch(const FlaxTensor& param, std::string_view name,
                                             int64_t features) {
  if (param.shape.size() != 1 || (features > 0 && param.shape[0] != features))
    return rank_error(name,
                      features > 0 ? "a LayerNorm parameter [" + std::to_string(features) + "]"
                                   : "a LayerNorm parameter [D]",
                      param);
  return param;
}

std::optional<std::string_view> torch_param_name(std::string_view flax_leaf) {
  if (flax_leaf == "kernel" || flax_leaf == "scale" || flax_leaf == "embedding") return "weight";
  if (flax_leaf == "bias") return "bias";
  return std::nullopt;
}

Result<FlaxTensor> to_f32(const FlaxTensor& x, std::string_view name) {
  if (x.dtype == FlaxDType::f32) return x;
  if (x.dtype != FlaxDType::f16 && x.dtype != FlaxDType::bf16 && x.dtype != FlaxDType::f64)
    return invalid_argument("flax tensor '" + std::string(name) + "': dtype '" +
                            std::string(flax_dtype_name(x.dtype)) + "' is not a float type");
  const int64_t n = x.numel();
  FlaxTensor out;
  out.dtype = FlaxDType::f32;
  out.shape = x.shape;
  out.numpy_scalar = x.numpy_scalar;
  try {
    auto buf = std::make_shared<std::vector<std::byte>>(size_t(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
      float f;
      if (x.dtype == FlaxDType::f64) {
        double d;
        std::memcpy(&d, x.bytes.data() + size_t(i) * 8, 8);
        f = float(d);
      } else {
        uint16_t h;
        std::memcpy(&h, x.bytes.data() + size_t(i) * 2, 2);
        f = x.dtype == FlaxDType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      std::memcpy(buf->data() + size_t(i) * 4, &f, 4);
    }
    out.bytes = *buf;
    out.owned = std::move(buf);
  } catch (const std::bad_alloc&) {
    return out_of_memory("flax tensor '" + std::string(name) + "': cannot allocate the f32 copy");
  }
  return out;
}

}  // namespace longrun::checkpoint
