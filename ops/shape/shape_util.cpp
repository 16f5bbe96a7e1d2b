#include "shape/shape_util.h"

#include <algorithm>

namespace longrun::shape {

std::string describe_input(int index, const TensorDesc& d) {
  return "input " + std::to_string(index) + " (" + d.to_string() + ")";
}

Status expect_dtype(int index, const TensorDesc& d, std::initializer_list<DType> allowed) {
  if (std::find(allowed.begin(), allowed.end(), d.dtype()) != allowed.end()) return {};
  std::string names;
  for (DType t : allowed) names += (names.empty() ? "" : "/") + std::string(dtype_name(t));
  return invalid_argument(describe_input(index, d) + ": expected dtype " + names + ", found " +
                          std::string(dtype_name(d.dtype())));
}

Status expect_rank(int index, const TensorDesc& d, int lo, int hi) {
  if (d.rank() >= lo && d.rank() <= hi) return {};
  const std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
  return invalid_argument(describe_input(index, d) + ": expected rank " + want + ", found " +
                          std::to_string(d.rank()));
}

Result<int> resolve_axis(int index, const TensorDesc& d, int axis, const char* attr) {
  const int a = d.normalize_axis(axis);
  if (a < 0)
    return invalid_argument(std::string(attr) + " " + std::to_string(axis) + " out of range for " +
                            describe_input(index, d));
  return a;
}

Result<std::vector<int64_t>> broadcast_dims(std::span<const int64_t> a, std::span<const int64_t> b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return invalid_argument("shapes do not broadcast: dim " + std::to_string(i) + " is " +
                              std::to_string(da) + " vs " + std::to_string(db));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string dims_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

Status expect_dim(int index, const TensorDesc& d, int axis, int64_t expected, const std::string& what) {
  if (axis >= 0 && axis < d.rank() && d.dim(axis) == expected) return {};
  const std::string found = axis >= 0 && axis < d.rank() ? std::to_string(d.dim(axis)) : "no such dim";
  return invalid_argument(describe_input(index, d) + ": dim " + std::to_string(axis) + " (" + what +
                          ") expected " + std::to_string(expected) + ", found " + found);
}

Status expect_broadcasts_to(int index, const TensorDesc& d, std::span<const int64_t> target) {
  bool ok = size_t(d.rank()) <= target.size();
  for (int i = 0; ok && i < d.rank(); ++i) {
    const int64_t t = target[target.size() - size_t(d.rank()) + size_t(i)];
    ok = d.dim(i) == 1 || d.dim(i) == t;
  }
  if (ok) return {};
  return invalid_argument(describe_input(index, d) + ": does not broadcast to " + dims_string(target));
}

Result<TensorDesc> make_desc(DType dtype, std::span<const int64_t> dims) {
  return TensorDesc::make(dtype, dims);
}

}  // namespace longrun::shape
