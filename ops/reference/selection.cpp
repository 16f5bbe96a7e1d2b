// Reference kernels for topk_mask, topk_indices and matmul_topk. Both rank a row with one total order:
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

// matmul_topk: each row's scores in f32 as attrs.h defines them (an in-order FMA chain, then
// alpha), the eligible columns ranked by rank_row's order.
Status reference_matmul_topk(const KernelArgs& args) {
  const auto& a = args.attr<MatmulTopkAttrs>();
  const TensorView& q = args.inputs[0];
  const TensorView& kv = args.inputs[1];
  const TensorView& y = args.outputs[0];
  size_t next = 2;
  const TensorView* mask = a.has_key_mask ? &args.inputs[next++] : nullptr;
  const TensorView* row_k = a.has_row_k ? &args.inputs[next] : nullptr;
  const int64_t batch = q.desc.dim(0), m = q.desc.dim(1), d = q.desc.dim(2), nk = kv.desc.dim(1);
  const int64_t off = nk - m;
  std::vector<double> scores;
  std::vector<int64_t> columns;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      scores.clear();
      columns.clear();
      for (int64_t j = 0; j < nk; ++j) {
        if (a.causal && j > i + off) break;
        if (mask != nullptr) {
          const int64_t mb = mask->desc.dim(0) == 1 ? 0 : b;
          if (ref::load_int(*mask, mb * mask->desc.stride(0) + j * mask->desc.stride(1)) == 0) continue;
        }
        float s = 0.0f;
        for (int64_t t = 0; t < d; ++t) {
          const auto x =
              float(ref::load(q, b * q.desc.stride(0) + i * q.desc.stride(1) + t * q.desc.stride(2)));
          const auto w =
              float(ref::load(kv, b * kv.desc.stride(0) + j * kv.desc.stride(1) + t * kv.desc.stride(2)));
          s = std::fma(x, w, s);
        }
        scores.push_back(double(s * a.alpha));
        columns.push_back(j);
      }
      int64_t slots = std::min<int64_t>(a.k, int64_t(columns.size()));
      if (row_k != nullptr) {
        const int64_t rb = row_k->desc.dim(0) == 1 ? 0 : b, ri = row_k->desc.dim(1) == 1 ? 0 : i;
        slots =
            std::min(slots, ref::load_int(*row_k, rb * row_k->desc.stride(0) + ri * row_k->desc.stride(1)));
      }
      const std::vector<int64_t> order = rank_row(scores);
      const int64_t base = b * y.desc.stride(0) + i * y.desc.stride(1);
      for (int64_t r = 0; r < a.k; ++r)
        ref::store_int(y, base + r * y.desc.stride(2), r < slots ? columns[size_t(order[size_t(r)])] : -1);
    }
  }
  return {};
}

}  // namespace longrun
