// Reference kernels for topk_mask and topk_indices. Both rank a row with one total order:
// larger value first, NaN above +inf (as torch.topk), and equal values (including NaN vs
// NaN and -0 vs +0) by ascending index, so the result is deterministic and independent of
// the sort algorithm.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "longrun/ops/schema.h"
#include "reference/access.h"

namespace longrun {
namespace {

// Positions of the row (values `v`) from best to worst.
std::vector<int64_t> rank_row(const std::vector<double>& v) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    const double a = v[size_t(i)], b = v[size_t(j)];
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na != nb) return na;          // NaN beats every number
    if (!na && a != b) return a > b;  // larger first
    return i < j;                     // ties: lower index wins
  });
  return order;
}

std::vector<double> read_row(const TensorView& x, int64_t base, int64_t stride, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = ref::load(x, base + i * stride);
  return v;
}

}  // namespace

Status reference_topk_mask(const KernelArgs& args) {
  const auto& a = args.attr<TopkMaskAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t n = x.desc.dim(axis);
  const int64_t k = a.k < n ? a.k : n;  // k is clamped to the row length
  const int64_t xs = x.desc.stride(axis), ys = y.desc.stride(axis);
  ref::for_each_line(x.desc, y.desc, axis, [&](int64_t in_base, int64_t out_base) {
    const std::vector<double> v = read_row(x, in_base, xs, n);
    const std::vector<int64_t> order = rank_row(v);
    std::vector<bool> kept(size_t(n), false);
    for (int64_t r = 0; r < k; ++r) kept[size_t(order[size_t(r)])] = true;
    for (int64_t i = 0; i < n; ++i) {
      const double out = a.output_scores
                             ? (kept[size_t(i)] ? v[size_t(i)] : -std::numeric_limits<double>::infinity())
                             : (kept[size_t(i)] ? 1.0 : 0.0);
      ref::store(y, out_base + i * ys, out);
    }
  });
  return {};
}

Status reference_topk_indices(const KernelArgs& args) {
  const auto& a = args.attr<TopkIndicesAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t n = x.desc.dim(axis);
  const int64_t xs = x.desc.stride(axis), ys = y.desc.stride(axis);
  ref::for_each_line(x.desc, y.desc, axis, [&](int64_t in_base, int64_t out_base) {
    const std::vector<int64_t> order = rank_row(read_row(x, in_base, xs, n));
    for (int64_t r = 0; r < a.k; ++r) ref::store_int(y, out_base + r * ys, order[size_t(r)]);
  });
  return {};
}

}  // namespace longrun
