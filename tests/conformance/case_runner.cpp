#include "conformance/case_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

#include "longrun/ops/schema.h"
#include "longrun/planner.h"
#include "ops/reference/access.h"

namespace longrun::conformance {
namespace {

constexpr size_t kGuardBytes = 64;
constexpr std::byte kGuardByte{0xCD};

std::string fmt(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Element `i` of the contiguous bytes `p` laid out as `d`, as double (the oracle's loader).
double element(const TensorDesc& d, const std::byte* p, int64_t i) {
  return ref::load(TensorView{d, const_cast<std::byte*>(p)}, i);
}

}  // namespace

AlignedBuffer::AlignedBuffer(size_t n)
    : size_(n), data_(static_cast<std::byte*>(::operator new[](n ? n : 1, std::align_val_t{64}))) {}
AlignedBuffer::~AlignedBuffer() { ::operator delete[](data_, std::align_val_t{64}); }

std::string_view mode_name(Mode mode) {
  switch (mode) {
    case Mode::inputs: return "inputs";
    case Mode::weights: return "weights";
    case Mode::inplace: return "inplace";
  }
  return "?";
}

std::string index_string(const TensorDesc& d, int64_t flat) {
  std::string s = "]";
  for (int i = d.rank() - 1; i >= 0; --i) {
    const int64_t n = d.dim(i) > 0 ? d.dim(i) : 1;
    s.insert(0, (i > 0 ? "," : "") + std::to_string(flat % n));
    flat /= n;
  }
  return "[" + s;
}

std::vector<size_t> weight_inputs(OpKind op, const OpAttrs& attrs) {
  switch (op) {
    case OpKind::matmul: {
      const auto& a = std::get<MatmulAttrs>(attrs);
      return a.has_bias ? std::vector<size_t>{1, 2} : std::vector<size_t>{1};
    }
    case OpKind::embedding: return {0};
    case OpKind::layer_norm: return {1, 2};
    default: return {};
  }
}

std::string mode_skip_reason(const OpCase& c, Mode mode) {
  if (mode == Mode::weights && weight_inputs(c.op, c.attrs).empty()) return "no weight operands";
  if (mode == Mode::inplace) {
    const int p = op_schema(c.op).inplace_input;
    if (p < 0 || size_t(p) >= c.descs.size()) return "the op cannot run in place";
    std::vector<TensorDesc> out;
    if (!infer_op(c.op, c.attrs, c.descs, &out).ok() || out.empty()) return "the case does not infer";
    const TensorDesc& in = c.descs[size_t(p)];
    if (in.dtype() != out[0].dtype() || !in.same_shape(out[0]))
      return "input and output differ in shape or dtype";
    if (in.rank() == 0) return "rank-0 input";
  }
  return {};
}

std::string prepare_case(Backend& backend, const OpCase& c, Mode mode, PreparedCase* out) {
  GraphBuilder b;
  std::vector<ValueId> args;
  std::vector<size_t> bound;  // input index of each graph input, in graph order
  const std::vector<size_t> weights =
      mode == Mode::weights ? weight_inputs(c.op, c.attrs) : std::vector<size_t>{};
  out->buffers.clear();
  for (size_t j = 0; j < c.descs.size(); ++j) {
    auto buf = std::make_shared<AlignedBuffer>(c.bytes[j].size());
    if (!c.bytes[j].empty()) std::memcpy(buf->data(), c.bytes[j].data(), c.bytes[j].size());
    out->buffers.push_back(buf);
    const std::string name = "in" + std::to_string(j);
    if (std::find(weights.begin(), weights.end(), j) != weights.end()) {
      args.push_back(b.weight(name, c.descs[j], buf->data(), buf));
    } else {
      args.push_back(b.input(name, c.descs[j]));
      bound.push_back(j);
    }
  }
  ValueId aliased = kNoValue;
  if (mode == Mode::inplace) {
    const size_t p = size_t(op_schema(c.op).inplace_input);
    TransposeAttrs id{.rank = c.descs[p].rank()};
    for (int i = 0; i < id.rank; ++i) id.perm[size_t(i)] = i;
    aliased = args[p] = b.transpose({args[p]}, id, "copy_in");
  }
  const ValueId y = b.op(c.op, c.attrs, args, "op_under_test");
  ValueId result = y;
  if (mode == Mode::inplace && y != kNoValue) {
    const TensorDesc& yd = b.desc(y);
    ReshapeAttrs same{.rank = yd.rank()};
    for (int i = 0; i < same.rank; ++i) same.dims[size_t(i)] = yd.dim(i);
    result = b.reshape({y}, same, "copy_out");
  }
  b.output(result, "out0");
  Result<Graph> built = b.build();
  if (!built.ok()) return "graph build failed: " + built.status().to_string();
  out->graph = std::make_unique<Graph>(std::move(built).value());
  const Graph& graph = *out->graph;
  out->out_desc = graph.value(graph.outputs()[0]).desc;

  Result<Plan> plan = plan_memory(graph);
  if (!plan.ok()) return "plan_memory failed: " + plan.status().to_string();
  if (mode == Mode::inplace && plan->storage[size_t(y)] != plan->storage[size_t(aliased)])
    return "the planner did not run the op in place (its input is an intermediate of the same dtype and size "
           "that dies at the op; schema inplace_input = " +
           std::to_string(op_schema(c.op).inplace_input) + ")";
  for (const Node& node : graph.nodes()) {
    std::string why;
    if (!backend.supports(graph, node, &why))
      return "backend '" + std::string(backend.name()) + "' does not support node '" + node.name +
             "': " + why;
  }
  Result<std::unique_ptr<Prepared>> prepared = backend.prepare(graph, plan.value(), {});
  if (!prepared.ok()) return "prepare failed: " + prepared.status().to_string();
  out->prepared = std::move(prepared).value();
  out->in_views.clear();
  for (size_t j : bound) out->in_views.push_back(TensorView{c.descs[j], out->buffers[j]->data()});
  return {};
}

RunOutcome execute_case(Backend& backend, const OpCase& c, PreparedCase& p, std::byte fill) {
  RunOutcome r;
  const size_t nbytes = size_t(p.out_desc.nbytes());
  AlignedBuffer obuf(nbytes + kGuardBytes);
  std::memset(obuf.data(), int(fill), nbytes);
  std::memset(obuf.data() + nbytes, int(kGuardByte), kGuardBytes);
  const TensorView ov{p.out_desc, obuf.data()};
  const Bindings bindings{p.in_views, std::span<const TensorView>(&ov, 1)};
  r.status = backend.execute(*p.prepared, bindings, nullptr);
  if (r.status.ok()) r.status = backend.synchronize();
  for (size_t i = 0; i < kGuardBytes; ++i)
    if (obuf.data()[nbytes + i] != kGuardByte) {
      r.violation =
          "out-of-bounds write: guard byte " + std::to_string(i) + " after the output was overwritten";
      return r;
    }
  // Graph inputs and weights alike must come back bit-identical.
  for (size_t j = 0; j < c.descs.size(); ++j)
    if (!c.bytes[j].empty() && std::memcmp(p.buffers[j]->data(), c.bytes[j].data(), c.bytes[j].size()) != 0) {
      r.violation = "input " + std::to_string(j) + " was modified by the run";
      return r;
    }
  if (r.status.ok()) r.bytes.assign(obuf.data(), obuf.data() + nbytes);
  return r;
}

std::string compare_outputs(const TensorDesc& d, std::span<const std::byte> expected,
                            std::span<const std::byte> actual, const Tolerance& tol, ErrorStats* stats) {
  const DType t = d.dtype();
  const size_t es = dtype_size(t);
  const int64_t n = d.numel();
  if (tol.max_norm_err < 0) return std::string("no tolerance: ") + tol.why;
  if (actual.size() != size_t(n) * es || expected.size() != size_t(n) * es)
    return "output has " + std::to_string(actual.size()) + " bytes, expected " +
           std::to_string(size_t(n) * es);
  const std::byte* e = expected.data();
  const std::byte* a = actual.data();
  int64_t bad = 0;
  std::string first;
  auto note = [&](int64_t i, const std::string& what) {
    if (++bad <= 4)
      first += "\n    at " + index_string(d, i) + ": got " + fmt(element(d, a, i)) + ", expected " +
               fmt(element(d, e, i)) + " (" + what + ")";
  };
  const bool is_float = dtype_is_float(t);
  if (tol.exact() || !is_float) {
    for (int64_t i = 0; i < n; ++i) {
      if (std::memcmp(e + i * int64_t(es), a + i * int64_t(es), es) == 0) continue;
      if (is_float && std::isnan(element(d, e, i)) && std::isnan(element(d, a, i))) continue;
      note(i, "must be bit-exact");
    }
    if (bad == 0) return {};
    return std::to_string(bad) + " of " + std::to_string(n) + " elements differ (exact op: " + tol.why + ")" +
           first;
  }
  double sum_d2 = 0, sum_b2 = 0, max_elem = 0;
  int64_t max_at = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double x = element(d, a, i);
    const double y = element(d, e, i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) note(i, "NaN position differs");
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) note(i, "Inf position or sign differs");
      continue;
    }
    sum_d2 += (x - y) * (x - y);
    sum_b2 += y * y;
    const double err = std::fabs(x - y) / std::max(1.0, std::fabs(y));
    if (err > max_elem || std::isnan(err)) max_elem = err, max_at = i;
  }
  const double norm_err = sum_b2 > 0 ? std::sqrt(sum_d2 / sum_b2) : std::sqrt(sum_d2);
  if (stats) *stats = {norm_err, max_elem};
  std::string msg;
  if (bad) msg += std::to_string(bad) + " NaN/Inf mismatches" + first + "\n    ";
  if (!(norm_err <= tol.max_norm_err))
    msg += "norm error " + fmt(norm_err) + " > " + fmt(tol.max_norm_err) + "; ";
  if (!(max_elem <= tol.max_abs_err) && max_at >= 0)
    msg += "element error " + fmt(max_elem) + " > " + fmt(tol.max_abs_err) + " at " +
           index_string(d, max_at) + " (got " + fmt(element(d, a, max_at)) + ", expected " +
           fmt(element(d, e, max_at)) + "); ";
  if (msg.empty()) return {};
  return msg + "(norm error " + fmt(norm_err) + ", max element error " + fmt(max_elem) + ")";
}

std::string bitwise_difference(const TensorDesc& d, std::span<const std::byte> a,
                               std::span<const std::byte> b) {
  if (a.size() != b.size())
    return "sizes differ (" + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + ")";
  size_t i = 0;
  while (i < a.size() && a[i] == b[i]) ++i;
  if (i == a.size()) return {};
  const int64_t el = int64_t(i / dtype_size(d.dtype()));
  int64_t count = 0;
  const size_t es = dtype_size(d.dtype());
  for (size_t k = 0; k < a.size(); k += es) count += std::memcmp(a.data() + k, b.data() + k, es) != 0;
  return std::to_string(count) + " elements differ, first at " + index_string(d, el) + " (" +
         fmt(element(d, a.data(), el)) + " vs " + fmt(element(d, b.data(), el)) + ")";
}

}  // namespace longrun::conformance
