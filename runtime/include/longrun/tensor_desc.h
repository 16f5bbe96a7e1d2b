// TensorDesc: dtype, rank (<= 6), dims and element strides of a tensor. A desc describes a
// view of some storage; the storage pointer travels separately (TensorView).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "longrun/dtype.h"
#include "longrun/status.h"

namespace longrun {

inline constexpr int kMaxRank = 6;

class TensorDesc {
 public:
  TensorDesc() = default;

  // A contiguous (row-major) tensor. Dims must be >= 0 and rank <= kMaxRank; use make() when
  // the dims come from outside and need validation.
  TensorDesc(DType dtype, std::span<const int64_t> dims);
  TensorDesc(DType dtype, std::initializer_list<int64_t> dims)
      : TensorDesc(dtype, std::span<const int64_t>(dims.begin(), dims.size())) {}

  // Validated construction: rank <= kMaxRank, dims >= 0, element count and byte size fit.
  static Result<TensorDesc> make(DType dtype, std::span<const int64_t> dims);
  static Result<TensorDesc> make_strided(DType dtype, std::span<const int64_t> dims,
                                         std::span<const int64_t> strides);

  DType dtype() const { return dtype_; }
  int rank() const { return rank_; }
  int64_t dim(int i) const { return dims_[i]; }
  int64_t stride(int i) const { return strides_[i]; }
  std::span<const int64_t> dims() const { return {dims_.data(), size_t(rank_)}; }
  std::span<const int64_t> strides() const { return {strides_.data(), size_t(rank_)}; }

  int64_t numel() const;
  // Bytes of a contiguous buffer holding numel() elements.
  int64_t nbytes() const { return numel() * int64_t(dtype_size(dtype_)); }
  // Smallest span of elements (from the first) the view touches; 0 when numel() == 0.
  int64_t storage_span() const;
  bool is_contiguous() const;
  bool same_shape(const TensorDesc& o) const;
  bool operator==(const TensorDesc& o) const;

  // Negative axis counts from the end. Returns -1 if out of range.
  int normalize_axis(int axis) const;

  // Views over the same storage (element offset of the view's first element in *offset).
  Result<TensorDesc> reshape(std::span<const int64_t> dims) const;  // needs contiguity; one -1 allowed
  Result<TensorDesc> permute(std::span<const int> perm) const;
  Result<TensorDesc> slice(int axis, int64_t start, int64_t end, int64_t step, int64_t* offset) const;

  TensorDesc with_dtype(DType t) const;
  // "f32[2,3,4]" (+ strides when not contiguous).
  std::string to_string() const;

 private:
  DType dtype_ = DType::f32;
  int rank_ = 0;
  std::array<int64_t, kMaxRank> dims_{};
  std::array<int64_t, kMaxRank> strides_{};
};

// Row-major strides for dims.
void contiguous_strides(std::span<const int64_t> dims, std::span<int64_t> strides);

// A desc plus the address of its element (0, ..., 0). Non-owning.
struct TensorView {
  TensorDesc desc;
  void* data = nullptr;

  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
  // Element offset of a multi-index (no bounds checks).
  int64_t offset_of(std::span<const int64_t> index) const {
    int64_t o = 0;
    for (int i = 0; i < desc.rank(); ++i) o += index[i] * desc.stride(i);
    return o;
  }
};

}  // namespace longrun
