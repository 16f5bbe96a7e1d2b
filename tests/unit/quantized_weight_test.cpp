// Quantized weights in the graph (dtype i8 with ChannelScales, longrun/graph.h): what the
// builder and Graph::verify accept and refuse, the fold of a reshape, and matmul on every
// host backend and precision against the same layer with the dequantized f32 weight (f32,
// bf16: the same bytes) or the unquantized source weight (int8: the same bytes, since q and
// scale are what the int8 format makes of it).
#include <doctest/doctest.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "backends/reference/matmul_dequantized.h"
#include "longrun/graph.h"
#include "longrun/ops/reduced_precision.h"
#include "longrun/planner.h"
#include "longrun/session.h"

namespace longrun {
namespace {

constexpr int64_t kN = 24, kK = 40, kRows = 5;

float wave(int64_t i) { return float((i * 37) % 23 - 11) * 0.03125f + float(i % 7) * 0.001f; }

// A linear layer's weight in `layout`: the f32 source, its quantization (q in the weight's
// own layout, scales per output channel) and the dequantized f32 values.
struct Layer {
  ops::LinearWeight layout;
  std::vector<float> source, dequantized, scale;
  std::vector<int8_t> q;
  std::vector<float> bias;
  explicit Layer(ops::LinearWeight l) : layout(l) {
    const bool nk = l == ops::LinearWeight::nk;
    source.resize(size_t(kN * kK));
    for (int64_t i = 0; i < kN * kK; ++i) source[size_t(i)] = wave(i);
    auto qw = ops::s8::quantize_weight(source.data(), DType::f32, l, kN, kK);
    REQUIRE(qw.ok());
    scale = qw->scale;
    q.resize(size_t(kN * kK));
    dequantized.resize(size_t(kN * kK));
    for (int64_t c = 0; c < kN; ++c)
      for (int64_t j = 0; j < kK; ++j) {
        const size_t at = size_t(nk ? c * kK + j : j * kN + c);
        q[at] = qw->q[size_t(c * kK + j)];
        dequantized[at] = float(q[at]) * scale[size_t(c)];
      }
    for (int64_t c = 0; c < kN; ++c) bias.push_back(float(c) * 0.01f);
  }
  TensorDesc desc(DType t) const {
    return layout == ops::LinearWeight::nk ? TensorDesc(t, {kN, kK}) : TensorDesc(t, {kK, kN});
  }
  ChannelScales scales() const { return {scale.data(), kN, layout == ops::LinearWeight::nk ? kK : 1}; }
  // y = x · op(W) + bias, W the quantized weight (weight == nullptr) or an f32 one.
  Result<Graph> graph(const std::vector<float>* weight) const {
    GraphBuilder b;
    const ValueId x = b.input("x", TensorDesc(DType::f32, {kRows, kK}));
    const ValueId w = weight == nullptr
                          ? b.quantized_weight("w", desc(DType::i8), q.data(), scales(), nullptr)
                          : b.weight("w", desc(DType::f32), weight->data());
    const ValueId bv = b.weight("b", TensorDesc(DType::f32, {kN}), bias.data());
    MatmulAttrs at;
    at.trans_b = layout == ops::LinearWeight::nk;
    at.has_bias = true;
    b.output(b.matmul({x, w, bv}, at), "y");
    return b.build();
  }
};

Result<std::vector<float>> run(Result<Graph> g, const std::string& backend, Precision p) {
  if (!g.ok()) return g.status();
  SessionOptions o;
  o.backend = backend;
  o.precision = p;
  LR_ASSIGN_OR_RETURN(auto s, Session::create(std::move(*g), o));
  std::vector<float> x(size_t(kRows * kK));
  for (size_t i = 0; i < x.size(); ++i) x[i] = wave(int64_t(i) * 3 + 1);
  const NamedTensorRef in[] = {{"x", TensorView{TensorDesc(DType::f32, {kRows, kK}), x.data()}}};
  LR_ASSIGN_OR_RETURN(auto out, s->run(in));
  const Tensor& y = out.at(0).tensor;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.desc().numel());
}

TEST_CASE("quantized weight: matmul on every host backend and precision, nk and kn") {
  for (const auto layout : {ops::LinearWeight::nk, ops::LinearWeight::kn}) {
    const Layer l(layout);
    for (const std::string backend : {"reference", "cpu"}) {
      for (const Precision p : {Precision::f32, Precision::bf16, Precision::int8}) {
        CAPTURE(backend);
        CAPTURE(precision_name(p));
        CAPTURE(layout == ops::LinearWeight::nk);
        auto got = run(l.graph(nullptr), backend, p);
        if (!got.ok() && got.status().code() == StatusCode::unsupported) continue;  // no AVX2
        REQUIRE_MESSAGE(got.ok(), got.status().to_string());
        auto want = run(l.graph(p == Precision::int8 ? &l.source : &l.dequantized), backend, p);
        REQUIRE_MESSAGE(want.ok(), want.status().to_string());
        CHECK(std::memcmp(got->data(), want->data(), got->size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("quantized weight: only a matmul reads it; a reshape keeps its scales; it counts 1 byte") {
  const Layer l(ops::LinearWeight::kn);
  SUBCASE("another op is refused, naming it and the value") {
    GraphBuilder b;
    const ValueId w = b.quantized_weight("w", l.desc(DType::i8), l.q.data(), l.scales(), nullptr);
    b.output(b.relu({w}, {}, "act"), "y");
    auto g = b.build();
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().message().find("'act' (relu)") != std::string::npos);
    CHECK(g.status().message().find("'w' is i8") != std::string::npos);
  }
  SUBCASE("matmul's A is refused") {
    GraphBuilder b;
    const ValueId w = b.quantized_weight("w", l.desc(DType::i8), l.q.data(), l.scales(), nullptr);
    const ValueId v = b.weight("v", TensorDesc(DType::f32, {kN, 3}), l.source.data());
    b.output(b.matmul({w, v}, {}, "mm"), "y");
    auto g = b.build();
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().message().find("input 0 'w' is i8") != std::string::npos);
  }
  SUBCASE("scales that do not tile the weight, an i8 input or plain i8 weight") {
    GraphBuilder b;
    CHECK(b.quantized_weight("w", l.desc(DType::i8), l.q.data(), {l.scale.data(), 7, 1}, nullptr) ==
          kNoValue);
    CHECK(b.status().message().find("quantized weight 'w'") != std::string::npos);
    GraphBuilder c;
    CHECK(c.input("x", TensorDesc(DType::i8, {2})) == kNoValue);
    GraphBuilder d;
    CHECK(d.weight("w", l.desc(DType::i8), l.q.data()) == kNoValue);
  }
  SUBCASE("a reshape folds with its scales and runs as the layer") {
    GraphBuilder b;
    const ValueId x = b.input("x", TensorDesc(DType::f32, {kRows, kK}));
    const ValueId w =
        b.quantized_weight("w", TensorDesc(DType::i8, {kK, 4, kN / 4}), l.q.data(), l.scales(), nullptr);
    ReshapeAttrs r;
    r.rank = 2;
    r.dims[0] = kK;
    r.dims[1] = kN;
    const ValueId w2 = b.reshape({w}, r, "view");
    b.output(b.matmul({x, w2}), "y");
    auto g = b.build();
    REQUIRE_MESSAGE(g.ok(), g.status().to_string());
    const Value& folded = g->value(w2);
    CHECK(folded.role == ValueRole::weight);
    CHECK(folded.scales.data == l.scale.data());
    CHECK(folded.scales.channels == kN);
    CHECK(folded.scales.stride == 1);
    auto plan = plan_memory(*g);
    REQUIRE(plan.ok());
    CHECK(plan->report.weight_bytes_mapped == kN * kK);  // i8: one byte per element
    std::vector<float> deq(size_t(kN * kK));
    dequantize_weight(folded, deq.data());
    CHECK(deq == l.dequantized);
  }
}

TEST_CASE("quantized weight: the reference backend makes one f32 copy per weight, shared") {
  const Layer l(ops::LinearWeight::nk);
  // Two matmuls read the one weight, quantized (weight == nullptr) or f32: y = x·Wᵀ + b, z = x·Wᵀ.
  auto factory = [&](const std::vector<float>* weight) -> GraphFactory {
    return [&l, weight](std::span<const TensorDesc> in) -> Result<Graph> {
      GraphBuilder b;
      const ValueId x = b.input("x", in[0]);
      const ValueId w = weight == nullptr
                            ? b.quantized_weight("w", l.desc(DType::i8), l.q.data(), l.scales(), nullptr)
                            : b.weight("w", l.desc(DType::f32), weight->data());
      const ValueId bv = b.weight("b", TensorDesc(DType::f32, {kN}), l.bias.data());
      MatmulAttrs at;
      at.trans_b = true;
      MatmulAttrs biased = at;
      biased.has_bias = true;
      b.output(b.matmul({x, w, bv}, biased, "with_bias"), "y");
      b.output(b.matmul({x, w}, at, "without_bias"), "z");
      return b.build();
    };
  };
  auto report = [](Session& s, int64_t rows) {
    const TensorDesc d(DType::f32, {rows, kK});
    auto r = s.memory_report({&d, 1});
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    return *r;
  };
  const size_t before = reference::dequantized_weight_entries();
  {
    const SessionOptions o{.backend = "reference"};
    auto a = Session::create(factory(nullptr), {"x"}, o);
    auto b = Session::create(factory(nullptr), {"x"}, o);
    auto f32 = Session::create(factory(&l.dequantized), {"x"}, o);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(f32.ok());
    CHECK(report(**a, kRows).weight_bytes_copied == kN * kK * int64_t(sizeof(float)));  // one copy, not two
    CHECK(reference::dequantized_weight_entries() == before + 1);
    CHECK(report(**a, 3).weight_bytes_copied == 0);      // another shape
    CHECK(report(**b, kRows).weight_bytes_copied == 0);  // another session
    CHECK(reference::dequantized_weight_entries() == before + 1);
    std::vector<float> x(size_t(kRows * kK));
    for (size_t i = 0; i < x.size(); ++i) x[i] = wave(int64_t(i) * 3 + 1);
    const NamedTensorRef in[] = {{"x", TensorView{TensorDesc(DType::f32, {kRows, kK}), x.data()}}};
    auto got = (*b)->run(in);
    auto want = (*f32)->run(in);
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    REQUIRE_MESSAGE(want.ok(), want.status().to_string());
    for (size_t i = 0; i < 2; ++i) {  // y and z: both matmuls read the shared copy
      const Tensor& g = got->at(i).tensor;
      const Tensor& w = want->at(i).tensor;
      REQUIRE(g.desc() == w.desc());
      CHECK(std::memcmp(g.data<float>(), w.data<float>(), size_t(w.desc().nbytes())) == 0);
    }
  }
  CHECK(reference::dequantized_weight_entries() == before);  // released with the last plan
}

TEST_CASE("quantized weight: the reference bf16 matmul rounds a weight as ops::bf16::round_weight") {
  // A weight already on the bf16 grid rounds to itself, so a session on round_weight's values
  // gives the same bits as one on the weight it rounded, quantized or not.
  for (const auto layout : {ops::LinearWeight::nk, ops::LinearWeight::kn}) {
    const Layer l(layout);
    for (const bool quantized : {false, true}) {
      CAPTURE(layout == ops::LinearWeight::nk);
      CAPTURE(quantized);
      const std::vector<float>& values = quantized ? l.dequantized : l.source;
      auto r = ops::bf16::round_weight(values.data(), DType::f32, ops::LinearWeight::nk, 1, kN * kK);
      REQUIRE(r.ok());
      std::vector<float> rounded(values.size());
      for (size_t i = 0; i < rounded.size(); ++i) rounded[i] = bf16_to_f32(r->w[i]);
      auto got = run(l.graph(quantized ? nullptr : &l.source), "reference", Precision::bf16);
      auto want = run(l.graph(&rounded), "reference", Precision::bf16);
      REQUIRE_MESSAGE(got.ok(), got.status().to_string());
      REQUIRE_MESSAGE(want.ok(), want.status().to_string());
      CHECK(std::memcmp(got->data(), want->data(), got->size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("quantized weight: a memory limit counts the buffers a weight copy is made from") {
  // A reduced-precision or quantized weight copy is made through buffers that exist only
  // while it is made (a quantized weight's f32 values, bf16 rounded values, int8 stored values
  // or quantization rows): the limit must hold the copy and them at once.
  constexpr int64_t n = 256, k = 128, rows = 2;
  std::vector<int8_t> q(size_t(n * k));
  for (size_t i = 0; i < q.size(); ++i) q[i] = int8_t(int(i * 37 % 255) - 127);
  std::vector<float> scale(size_t(n), 0.0f);
  for (size_t c = 0; c < scale.size(); ++c) scale[c] = 0.01f + float(c) * 1e-4f;
  std::vector<float> wf(size_t(n * k));
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = wave(int64_t(i) * 5 + 2);
  auto graph = [&](bool quantized) -> Result<Graph> {
    GraphBuilder b;
    const ValueId x = b.input("x", TensorDesc(DType::f32, {rows, k}));
    const ValueId w = quantized ? b.quantized_weight("w", TensorDesc(DType::i8, {n, k}), q.data(),
                                                     {scale.data(), n, k}, nullptr)
                                : b.weight("w", TensorDesc(DType::f32, {n, k}), wf.data());
    MatmulAttrs at;
    at.trans_b = true;
    b.output(b.matmul({x, w}, at), "y");
    return b.build();
  };
  std::vector<float> x(size_t(rows * k), 0.5f);
  const NamedTensorRef in[] = {{"x", TensorView{TensorDesc(DType::f32, {rows, k}), x.data()}}};
  // Runs a fresh session under `limit` (0: none); each one makes its copy anew, as the copy
  // lives only while a session holds it.
  auto run_under = [&](const char* backend, Precision p, bool quantized, int64_t limit,
                       MemoryReport* report) -> Status {
    auto g = graph(quantized);
    LR_RETURN_IF_ERROR(g.status());
    SessionOptions o{.backend = backend, .threads = 1, .precision = p, .memory_limit_bytes = limit};
    LR_ASSIGN_OR_RETURN(auto s, Session::create(std::move(*g), o));
    LR_ASSIGN_OR_RETURN(auto out, s->run(in));
    if (report != nullptr) {
      const TensorDesc d(DType::f32, {rows, k});
      LR_ASSIGN_OR_RETURN(*report, s->memory_report({&d, 1}));
    }
    return {};
  };
  const std::string node = graph(false)->nodes().at(0).name;
  struct Case {
    const char* backend;
    Precision precision;
    bool quantized;
    int64_t transient;  // bytes held beside the copy while it is made
  };
  const int64_t ldq = 128;  // round_up(k, 8): the int8 route's quantized row stride
  const Case cases[] = {
      {"cpu", Precision::f32, true, n * k * 4},               // f32 values, packed
      {"cpu", Precision::bf16, true, n * k * 4 + n * k * 2},  // f32 values and bf16 rounded
      {"cpu", Precision::bf16, false, n * k * 2},             // bf16 rounded
      {"cpu", Precision::int8, false, 16 * ldq * 2},          // one thread's quantized rows
      {"cpu", Precision::int8, true, n * k + n * 4},          // the stored q and scales
      {"reference", Precision::bf16, true, 0},                // rounded in place in the copy
      {"reference", Precision::bf16, false, 0},
      {"reference", Precision::int8, false, k * 4},  // one channel's f32 row
      {"reference", Precision::int8, true, 0},       // the stored q and scales are the copy
  };
  for (const Case& c : cases) {
    const std::string backend = c.backend;
    CAPTURE(backend);
    CAPTURE(precision_name(c.precision));
    CAPTURE(c.quantized);
    MemoryReport r;
    const Status unlimited = run_under(c.backend, c.precision, c.quantized, 0, &r);
    if (unlimited.code() == StatusCode::unsupported) continue;  // no AVX2
    REQUIRE_MESSAGE(unlimited.ok(), unlimited.to_string());
    const int64_t total = r.arena_bytes + r.workspace_bytes + r.weight_bytes_copied;
    REQUIRE(r.weight_bytes_copied > 0);
    // The least limit that prepares, found by bisection: the arena, the copy and the
    // transient buffers at once, beyond what the report keeps.
    int64_t lo = 0, hi = total + c.transient;  // lo fails, hi prepares
    REQUIRE(run_under(c.backend, c.precision, c.quantized, hi, nullptr).ok());
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (run_under(c.backend, c.precision, c.quantized, mid, nullptr).ok() ? hi : lo) = mid;
    }
    CAPTURE(hi);  // the least limit, for a failure's report
    const Status below = run_under(c.backend, c.precision, c.quantized, hi - 1, nullptr);
    CHECK(below.code() == StatusCode::out_of_memory);
    if (c.transient == 0) {
      CHECK(hi == total);
      continue;
    }
    CHECK(hi == r.arena_bytes + r.weight_bytes_copied + c.transient);
    CHECK(hi > total);
    CHECK_MESSAGE(below.message().find("node '" + node + "'") != std::string::npos, below.to_string());
    CHECK_MESSAGE(below.message().find("(transient)") != std::string::npos, below.to_string());
  }
}

}  // namespace
}  // namespace longrun
