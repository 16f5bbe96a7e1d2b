#include "conformance/run_case.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "longrun/graph.h"
#include "longrun/ops/schema.h"
#include "longrun/planner.h"

namespace longrun::conformance {
namespace {

constexpr size_t kGuardBytes = 64;
constexpr std::byte kGuardByte{0xCD};

std::unique_ptr<Backend>& backend_slot() {
  static std::unique_ptr<Backend> b;
  return b;
}

// A 64-byte aligned byte buffer.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t n)
      : size_(n), data_(static_cast<std::byte*>(::operator new[](n ? n : 1, std::align_val_t{64}))) {}
  ~AlignedBuffer() { ::operator delete[](data_, std::align_val_t{64}); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  size_t size_;
  std::byte* data_;
};

std::string fmt(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
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

double load_float(DType t, const std::byte* p) {
  switch (t) {
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::f16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return f16_to_f32(h);
    }
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bf16_to_f32(h);
    }
    case DType::i32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case DType::i64: {
      int64_t i;
      std::memcpy(&i, p, 8);
      return double(i);
    }
    case DType::u8: return double(uint8_t(*p));
  }
  return 0;
}

// Which inputs are conventionally weights (bound as graph weights in Mode::weights).
std::vector<size_t> weight_inputs(const GoldenCase& c) {
  switch (c.op) {
    case OpKind::matmul: {
      const auto& a = std::get<MatmulAttrs>(c.attrs);
      return a.has_bias ? std::vector<size_t>{1, 2} : std::vector<size_t>{1};
    }
    case OpKind::embedding: return {0};
    case OpKind::layer_norm: return {1, 2};
    default: return {};
  }
}

std::string applies(const GoldenCase& c, Mode mode) {
  if (mode == Mode::weights && weight_inputs(c).empty()) return "no weight operands";
  if (mode == Mode::inplace) {
    const int p = op_schema(c.op).inplace_input;
    if (p < 0 || size_t(p) >= c.inputs.size()) return "the op cannot run in place";
    const TensorDesc& in = c.inputs[size_t(p)]->desc;
    const TensorDesc& out = c.output->desc;
    if (in.dtype() != out.dtype() || !in.same_shape(out)) return "input and output differ in shape or dtype";
    if (in.rank() == 0) return "rank-0 input";
  }
  return {};
}

}  // namespace

std::string_view mode_name(Mode mode) {
  switch (mode) {
    case Mode::inputs: return "inputs";
    case Mode::weights: return "weights";
    case Mode::inplace: return "inplace";
  }
  return "?";
}

Backend& conformance_backend() { return *backend_slot(); }
void set_conformance_backend(std::unique_ptr<Backend> backend) { backend_slot() = std::move(backend); }

std::string compare_with_golden(const SafetensorsEntry& expected, std::span<const std::byte> actual,
                                const Tolerance& tol, ErrorStats* stats) {
  const TensorDesc& d = expected.desc;
  const DType t = d.dtype();
  const size_t es = dtype_size(t);
  const int64_t n = d.numel();
  if (tol.max_norm_err < 0) return std::string("no tolerance: ") + tol.why;
  if (actual.size() != size_t(n) * es)
    return "output has " + std::to_string(actual.size()) + " bytes, expected " +
           std::to_string(size_t(n) * es);
  const std::byte* e = expected.bytes.data();
  const std::byte* a = actual.data();
  int64_t bad = 0;
  std::string first;
  auto note = [&](int64_t i, const std::string& what) {
    if (++bad <= 4)
      first += "\n    at " + index_string(d, i) + ": got " + fmt(load_float(t, a + i * int64_t(es))) +
               ", expected " + fmt(load_float(t, e + i * int64_t(es))) + " (" + what + ")";
  };
  const bool is_float = dtype_is_float(t);
  if (tol.exact() || !is_float) {
    for (int64_t i = 0; i < n; ++i) {
      const std::byte* pe = e + i * int64_t(es);
      const std::byte* pa = a + i * int64_t(es);
      if (std::memcmp(pe, pa, es) == 0) continue;
      if (is_float && std::isnan(load_float(t, pe)) && std::isnan(load_float(t, pa))) continue;
      note(i, "must be bit-exact");
    }
    if (bad == 0) return {};
    return std::to_string(bad) + " of " + std::to_string(n) + " elements differ (exact op: " + tol.why + ")" +
           first;
  }
  double sum_d2 = 0, sum_b2 = 0, max_elem = 0;
  int64_t max_at = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double x = load_float(t, a + i * int64_t(es));
    const double y = load_float(t, e + i * int64_t(es));
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
           index_string(d, max_at) + " (got " + fmt(load_float(t, a + max_at * int64_t(es))) + ", expected " +
           fmt(load_float(t, e + max_at * int64_t(es))) + "); ";
  if (msg.empty()) return {};
  return msg + "(norm error " + fmt(norm_err) + ", max element error " + fmt(max_elem) + ")";
}

CaseOutcome run_case(Backend& backend, const GoldenCase& c, Mode mode) {
  CaseOutcome out;
  if (std::string why = applies(c, mode); !why.empty()) return {true, true, why};
  auto fail = [&](std::string m) {
    out.ok = false;
    out.message = std::move(m);
    return out;
  };

  // Inputs: aligned copies of the golden bytes (also the reference for "inputs unchanged").
  GraphBuilder b;
  std::vector<std::shared_ptr<AlignedBuffer>> bufs;
  std::vector<ValueId> args;
  std::vector<size_t> bound;  // golden input index of each graph input, in graph order
  const std::vector<size_t> weights = mode == Mode::weights ? weight_inputs(c) : std::vector<size_t>{};
  for (size_t j = 0; j < c.inputs.size(); ++j) {
    const SafetensorsEntry& e = *c.inputs[j];
    auto buf = std::make_shared<AlignedBuffer>(e.bytes.size());
    if (!e.bytes.empty()) std::memcpy(buf->data(), e.bytes.data(), e.bytes.size());
    bufs.push_back(buf);
    const std::string name = "in" + std::to_string(j);
    if (std::find(weights.begin(), weights.end(), j) != weights.end()) {
      args.push_back(b.weight(name, e.desc, buf->data(), buf));
    } else {
      args.push_back(b.input(name, e.desc));
      bound.push_back(j);
    }
  }
  ValueId aliased = kNoValue;
  if (mode == Mode::inplace) {
    const size_t p = size_t(op_schema(c.op).inplace_input);
    TransposeAttrs id{.rank = c.inputs[p]->desc.rank()};
    for (int i = 0; i < id.rank; ++i) id.perm[size_t(i)] = i;
    aliased = args[p] = b.transpose({args[p]}, id, "copy_in");
  }
  const ValueId y = b.op(c.op, c.attrs, args, "op_under_test");
  ValueId result = y;
  if (mode == Mode::inplace) {
    ReshapeAttrs same{.rank = c.output->desc.rank()};
    for (int i = 0; i < same.rank; ++i) same.dims[size_t(i)] = c.output->desc.dim(i);
    result = b.reshape({y}, same, "copy_out");
  }
  b.output(result, "out0");
  Result<Graph> built = b.build();
  if (!built.ok()) return fail("graph build failed: " + built.status().to_string());
  const Graph& graph = built.value();
  const TensorDesc& got_desc = graph.value(graph.outputs()[0]).desc;
  if (got_desc.dtype() != c.output->desc.dtype() || !got_desc.same_shape(c.output->desc))
    return fail("shape inference gives " + got_desc.to_string() + ", golden has " +
                c.output->desc.to_string());

  Result<Plan> plan = plan_memory(graph);
  if (!plan.ok()) return fail("plan_memory failed: " + plan.status().to_string());
  if (mode == Mode::inplace && plan->storage[size_t(y)] != plan->storage[size_t(aliased)])
    return fail(
        "the planner did not run the op in place (its input is an intermediate of the same dtype and size "
        "that dies at the op; schema inplace_input = " +
        std::to_string(op_schema(c.op).inplace_input) + ")");
  for (const Node& node : graph.nodes()) {
    std::string why;
    if (!backend.supports(graph, node, &why))
      return fail("backend '" + std::string(backend.name()) + "' does not support node '" + node.name +
                  "': " + why);
  }
  Result<std::unique_ptr<Prepared>> prepared = backend.prepare(graph, plan.value());
  if (!prepared.ok()) return fail("prepare failed: " + prepared.status().to_string());

  std::vector<TensorView> in_views;
  for (size_t j : bound) in_views.push_back(TensorView{c.inputs[j]->desc, bufs[j]->data()});
  const size_t nbytes = c.output->bytes.size();

  // One execution into a fresh output buffer filled with `fill`; returns the output bytes.
  auto run_once = [&](std::byte fill, std::vector<std::byte>* result_bytes) -> std::string {
    AlignedBuffer obuf(nbytes + kGuardBytes);
    std::memset(obuf.data(), int(fill), nbytes);
    std::memset(obuf.data() + nbytes, int(kGuardByte), kGuardBytes);
    const TensorView ov{got_desc, obuf.data()};
    Bindings bindings{in_views, std::span<const TensorView>(&ov, 1)};
    Status st = backend.execute(*prepared.value(), bindings, nullptr);
    if (st.ok()) st = backend.synchronize();
    if (!st.ok()) return "execute failed: " + st.to_string();
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (obuf.data()[nbytes + i] != kGuardByte)
        return "out-of-bounds write: guard byte " + std::to_string(i) + " after the output was overwritten";
    for (size_t j = 0; j < c.inputs.size(); ++j)
      if (!c.inputs[j]->bytes.empty() &&
          std::memcmp(bufs[j]->data(), c.inputs[j]->bytes.data(), c.inputs[j]->bytes.size()) != 0)
        return "input " + std::to_string(j) + " was modified by the run";
    result_bytes->assign(obuf.data(), obuf.data() + nbytes);
    return {};
  };

  std::vector<std::byte> first, second;
  if (std::string e = run_once(std::byte{0xA5}, &first); !e.empty()) return fail(e);
  const Tolerance tol = tolerance_for(c.op, c.output->desc.dtype());
  if (std::string e = compare_with_golden(*c.output, first, tol, &out.error); !e.empty()) return fail(e);
  if (std::string e = run_once(std::byte{0x5A}, &second); !e.empty()) return fail("second run: " + e);
  if (first != second) {
    size_t i = 0;
    while (i < nbytes && first[i] == second[i]) ++i;
    const size_t es = dtype_size(got_desc.dtype());
    return fail("not deterministic: two runs differ first at element " +
                index_string(got_desc, int64_t(i / es)) + " (an element left unwritten shows up here too)");
  }
  return out;
}

}  // namespace longrun::conformance
