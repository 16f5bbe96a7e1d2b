#include "combiner/combiner_graph.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "common/blocks.h"

namespace longrun::models::combiner {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

template <typename T>
ValueId host_constant(GraphContext& c, const std::string& name, DType dtype, const std::vector<int64_t>& dims,
                      std::vector<T> data) {
  if (!c.ok()) return kNoValue;
  auto owner = std::make_shared<std::vector<T>>(std::move(data));
  const void* bytes = owner->data();
  return c.b.weight(name, TensorDesc(dtype, dims), bytes, std::shared_ptr<const void>(owner, bytes));
}

}  // namespace

ValueId keep_mask(GraphContext& c, const std::string& name, std::vector<int64_t> dims,
                  const std::function<bool(int64_t, int64_t, int64_t)>& keep) {
  std::vector<int64_t> d3 = dims;
  while (d3.size() < 3) d3.insert(d3.begin(), 1);
  std::vector<uint8_t> data(size_t(d3[0] * d3[1] * d3[2]));
  size_t at = 0;
  for (int64_t i = 0; i < d3[0]; ++i)
    for (int64_t j = 0; j < d3[1]; ++j)
      for (int64_t k = 0; k < d3[2]; ++k) data[at++] = keep(i, j, k) ? 1 : 0;
  return host_constant(c, name, DType::u8, dims, std::move(data));
}

ValueId constant_f32(GraphContext& c, const std::string& name, std::vector<int64_t> dims,
                     std::vector<float> data) {
  return host_constant(c, name, DType::f32, dims, std::move(data));
}

ValueId masked(GraphContext& c, ValueId x, const std::vector<ValueId>& keeps, float fill,
               const std::string& name) {
  bool any = false;
  for (ValueId k : keeps) any = any || k != kNoValue;
  if (!any) return x;
  const ValueId f = constant_f32(c, name + ".fill", {1}, {fill});
  for (ValueId k : keeps)
    if (k != kNoValue) x = c.b.where({k, x, f}, {}, name);
  return x;
}

ValueId matmul_nt(GraphContext& c, ValueId a, ValueId b, const std::string& name) {
  return c.b.matmul({a, b}, {.trans_b = true}, name);
}

ValueId matmul_nn(GraphContext& c, ValueId a, ValueId b, const std::string& name) {
  return c.b.matmul({a, b}, {}, name);
}

ValueId swap_blocks(GraphContext& c, ValueId x) { return transpose(c, x, {0, 1, 3, 2, 4}); }

ValueId attend(GraphContext& c, ValueId q, ValueId k, ValueId v, const std::vector<ValueId>& keeps,
               const std::string& name) {
  const ValueId logits = masked(c, matmul_nt(c, q, k, name + ".logits"), keeps, -kInf, name + ".mask");
  return matmul_nn(c, c.b.softmax({logits}, {.axis = -1}, name + ".softmax"), v, name + ".values");
}

ValueId combine(GraphContext& c, ValueId q_rows, ValueId q_cols, const std::vector<SlotGroup>& groups,
                const std::string& name) {
  if (!c.ok()) return kNoValue;
  std::vector<ValueId> logits;
  std::vector<int64_t> widths;
  for (const SlotGroup& g : groups) {
    const std::string p = name + "." + g.name;
    ValueId l = matmul_nt(c, g.cols ? q_cols : q_rows, g.key, p + ".logits");
    l = masked(c, l, g.keeps, -kInf, p + ".mask");
    if (g.cols) l = swap_blocks(c, l);
    if (!c.ok()) return kNoValue;
    const TensorDesc& ld = c.desc(l);
    widths.push_back(ld.dim(ld.rank() - 1));
    logits.push_back(l);
  }
  const ValueId all = logits.size() == 1 ? logits[0] : c.b.concat(logits, {.axis = -1}, name + ".slots");
  const ValueId w = c.b.softmax({all}, {.axis = -1}, name + ".softmax");
  ValueId out = kNoValue;
  int64_t start = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const SlotGroup& g = groups[i];
    const std::string p = name + "." + g.name;
    ValueId wg =
        groups.size() == 1 ? w : c.b.slice({w}, {.axis = -1, .start = start, .end = start + widths[i]});
    start += widths[i];
    if (g.cols) wg = swap_blocks(c, wg);
    ValueId y = matmul_nn(c, wg, g.value, p + ".values");
    if (g.cols) y = swap_blocks(c, y);
    out = out == kNoValue ? y : c.b.add({out, y}, {}, p + ".sum");
  }
  return out;
}

ValueId exclusive_pool(GraphContext& c, ValueId x, int axis, bool reverse, Pooling pooling,
                       const std::string& name) {
  if (!c.ok()) return kNoValue;
  const TensorDesc d = c.desc(x);
  const int64_t m = d.dim(axis);
  if (pooling == Pooling::max) {
    const ValueId inclusive = c.b.cummax({x}, {.axis = axis, .reverse = reverse}, name + ".cummax");
    // JAX shift_right / shift_left: the prefix becomes exclusive, the empty one 0.
    const ValueId shifted = c.b.pad(
        {inclusive}, {.axis = axis, .before = reverse ? 0 : 1, .after = reverse ? 1 : 0}, name + ".shift");
    return c.b.slice({shifted}, {.axis = axis, .start = reverse ? 1 : 0, .end = reverse ? m + 1 : m});
  }
  // The TF code's exclusive cumsum (tf.cumsum(exclusive=True, reverse=...)): the empty
  // prefix is 0 as in the max branch.
  return c.b.cumsum({x}, {.axis = axis, .reverse = reverse, .exclusive = true}, name + ".cumsum");
}

}  // namespace longrun::models::combiner
