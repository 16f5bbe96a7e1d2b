#include "longrun/tensor_desc.h"

#include <cassert>

#include "longrun/checked_math.h"

namespace longrun {

void contiguous_strides(std::span<const int64_t> dims, std::span<int64_t> strides) {
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = s;
    s *= dims[i] > 0 ? dims[i] : 1;
  }
}

TensorDesc::TensorDesc(DType dtype, std::span<const int64_t> dims) : dtype_(dtype), rank_(int(dims.size())) {
  assert(dims.size() <= size_t(kMaxRank));
  for (int i = 0; i < rank_; ++i) dims_[i] = dims[i];
  contiguous_strides(this->dims(), {strides_.data(), size_t(rank_)});
}

Result<TensorDesc> TensorDesc::make(DType dtype, std::span<const int64_t> dims) {
  if (dims.size() > size_t(kMaxRank))
    return invalid_argument("rank " + std::to_string(dims.size()) + " exceeds the maximum of " +
                            std::to_string(kMaxRank));
  int64_t n;
  if (!checked_product(dims, &n)) {
    for (int64_t d : dims)
      if (d < 0) return invalid_argument("negative dimension " + std::to_string(d));
    return overflow_error("element count of the shape overflows 64 bits");
  }
  int64_t bytes;
  if (!checked_mul(n, int64_t(dtype_size(dtype)), &bytes))
    return overflow_error("byte size of the shape overflows 64 bits");
  return TensorDesc(dtype, dims);
}

Result<TensorDesc> TensorDesc::make_strided(DType dtype, std::span<const int64_t> dims,
                                            std::span<const int64_t> strides) {
  if (strides.size() != dims.size()) return invalid_argument("strides rank differs from dims rank");
  LR_ASSIGN_OR_RETURN(TensorDesc d, make(dtype, dims));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (strides[i] < 0) return invalid_argument("negative stride");
    d.strides_[i] = strides[i];
  }
  int64_t span = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t t;
    if (dims[i] == 0) return d;
    if (!checked_mul(dims[i] - 1, strides[i], &t) || !checked_add(span, t, &span))
      return overflow_error("strided extent overflows 64 bits");
  }
  return d;
}

int64_t TensorDesc::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

int64_t TensorDesc::storage_span() const {
  int64_t span = 1;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] == 0) return 0;
    span += (dims_[i] - 1) * strides_[i];
  }
  return span;
}

bool TensorDesc::is_contiguous() const {
  // An empty tensor touches no element, so any strides describe it (and contiguous_strides
  // gives zero-sized dims stride products as if they were 1).
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] == 0) return true;
  int64_t s = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    if (dims_[i] != 1 && strides_[i] != s) return false;
    s *= dims_[i];
  }
  return true;
}

bool TensorDesc::same_shape(const TensorDesc& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

bool TensorDesc::operator==(const TensorDesc& o) const {
  if (dtype_ != o.dtype_ || !same_shape(o)) return false;
  for (int i = 0; i < rank_; ++i)
    if (strides_[i] != o.strides_[i]) return false;
  return true;
}

int TensorDesc::normalize_axis(int axis) const {
  const int a = axis < 0 ? axis + rank_ : axis;
  return (a < 0 || a >= rank_) ? -1 : a;
}

Result<TensorDesc> TensorDesc::reshape(std::span<const int64_t> dims) const {
  if (!is_contiguous()) return invalid_argument("reshape of a non-contiguous view " + to_string());
  if (dims.size() > size_t(kMaxRank))
    return invalid_argument("reshape: rank exceeds " + std::to_string(kMaxRank));
  std::array<int64_t, kMaxRank> out{};
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer >= 0) return invalid_argument("reshape: more than one -1 dimension");
      infer = int(i);
      continue;
    }
    if (dims[i] < 0) return invalid_argument("reshape: negative dimension " + std::to_string(dims[i]));
    if (!checked_mul(known, dims[i], &known)) return overflow_error("reshape: element count overflows");
    out[i] = dims[i];
  }
  const int64_t n = numel();
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      return invalid_argument("reshape: cannot infer -1 for " + std::to_string(n) + " elements");
    out[size_t(infer)] = n / known;
  } else if (known != n) {
    return invalid_argument("reshape: " + to_string() + " has " + std::to_string(n) +
                            " elements, target shape has " + std::to_string(known));
  }
  return TensorDesc(dtype_, std::span<const int64_t>(out.data(), dims.size()));
}

Result<TensorDesc> TensorDesc::permute(std::span<const int> perm) const {
  if (int(perm.size()) != rank_)
    return invalid_argument("permute: perm has " + std::to_string(perm.size()) + " entries for rank " +
                            std::to_string(rank_));
  TensorDesc d = *this;
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank_; ++i) {
    const int p = perm[size_t(i)];
    if (p < 0 || p >= rank_ || seen[p]) return invalid_argument("permute: invalid permutation");
    seen[p] = true;
    d.dims_[i] = dims_[p];
    d.strides_[i] = strides_[p];
  }
  return d;
}

Result<TensorDesc> TensorDesc::slice(int axis, int64_t start, int64_t end, int64_t step,
                                     int64_t* offset) const {
  const int a = normalize_axis(axis);
  if (a < 0)
    return invalid_argument("slice: axis " + std::to_string(axis) + " out of range for " + to_string());
  if (step < 1) return invalid_argument("slice: step must be >= 1");
  const int64_t n = dims_[a];
  auto clamp = [n](int64_t v) {
    if (v < 0) v += n;
    return v < 0 ? 0 : (v > n ? n : v);
  };
  const int64_t s = clamp(start), e = clamp(end);
  TensorDesc d = *this;
  d.dims_[a] = e > s ? (e - s + step - 1) / step : 0;
  d.strides_[a] = strides_[a] * step;
  *offset = s * strides_[a];
  return d;
}

TensorDesc TensorDesc::with_dtype(DType t) const {
  TensorDesc d = *this;
  d.dtype_ = t;
  return d;
}

std::string TensorDesc::to_string() const {
  std::string s(dtype_name(dtype_));
  s += '[';
  for (int i = 0; i < rank_; ++i) s += (i ? "," : "") + std::to_string(dims_[i]);
  s += ']';
  if (!is_contiguous()) {
    s += "{strides ";
    for (int i = 0; i < rank_; ++i) s += (i ? "," : "") + std::to_string(strides_[i]);
    s += '}';
  }
  return s;
}

}  // namespace longrun
