#include "longrun/tensor.h"

#include <cstring>
#include <new>

namespace longrun {

Result<Tensor> Tensor::zeros(DType dtype, std::span<const int64_t> dims) {
  LR_ASSIGN_OR_RETURN(TensorDesc d, TensorDesc::make(dtype, dims));
  return zeros(d);
}

Result<Tensor> Tensor::zeros(const TensorDesc& desc) {
  if (!desc.is_contiguous())
    return invalid_argument("Tensor needs a contiguous desc, found " + desc.to_string());
  Tensor t;
  t.desc_ = desc;
  const size_t n = size_t(desc.nbytes());
  // Aligned for SIMD; at least one byte so data() is never null.
  std::byte* p = static_cast<std::byte*>(::operator new[](n ? n : 1, std::align_val_t{64}, std::nothrow));
  if (!p) return out_of_memory("cannot allocate " + std::to_string(n) + " bytes for " + desc.to_string());
  std::memset(p, 0, n);
  t.data_ =
      std::shared_ptr<std::byte[]>(p, [](std::byte* q) { ::operator delete[](q, std::align_val_t{64}); });
  return t;
}

Result<Tensor> Tensor::from_bytes(const TensorDesc& desc, std::span<const std::byte> bytes) {
  if (int64_t(bytes.size()) != desc.nbytes())
    return invalid_argument("Tensor::from_bytes: " + desc.to_string() + " needs " +
                            std::to_string(desc.nbytes()) + " bytes, found " + std::to_string(bytes.size()));
  LR_ASSIGN_OR_RETURN(Tensor t, zeros(desc));
  if (!bytes.empty()) std::memcpy(t.data_.get(), bytes.data(), bytes.size());
  return t;
}

Result<Tensor> Tensor::clone() const {
  if (empty()) return Tensor{};
  return from_bytes(desc_, bytes());
}

}  // namespace longrun
