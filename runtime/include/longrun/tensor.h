// Tensor: an owning, contiguous host tensor (desc + shared bytes). Cheap to copy (the bytes
// are shared); use clone() for a deep copy.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun {

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor; fails on invalid dims or when the allocation fails.
  static Result<Tensor> zeros(DType dtype, std::span<const int64_t> dims);
  static Result<Tensor> zeros(const TensorDesc& contiguous_desc);
  // Copies `bytes` (must be exactly desc.nbytes()).
  static Result<Tensor> from_bytes(const TensorDesc& contiguous_desc, std::span<const std::byte> bytes);
  template <typename T>
  static Result<Tensor> from_vector(DType dtype, std::span<const int64_t> dims, std::span<const T> values) {
    return from_bytes(TensorDesc(dtype, dims), std::as_bytes(values));
  }

  const TensorDesc& desc() const { return desc_; }
  DType dtype() const { return desc_.dtype(); }
  int64_t numel() const { return desc_.numel(); }
  int64_t nbytes() const { return desc_.nbytes(); }
  bool empty() const { return !data_; }

  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(data_.get());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_.get());
  }
  std::span<std::byte> bytes() { return {data_.get(), size_t(nbytes())}; }
  std::span<const std::byte> bytes() const { return {data_.get(), size_t(nbytes())}; }
  TensorView view() const { return {desc_, data_.get()}; }

  Result<Tensor> clone() const;  // deep copy; fails only when the allocation fails

 private:
  TensorDesc desc_;
  std::shared_ptr<std::byte[]> data_;
};

// A non-owning named input for Session::run.
struct NamedTensorRef {
  std::string name;
  TensorView view;  // must be contiguous
};
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

}  // namespace longrun
