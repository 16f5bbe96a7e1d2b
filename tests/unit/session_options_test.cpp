// The C++ API's counterparts of the C API's session options: log callback, determinism
// switch, thread affinity (progress/cancel is RunHooks::progress: session_test.cpp).
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "longrun/ops/schema.h"
#include "longrun/session.h"
#include "longrun/thread_pool.h"

using namespace longrun;

namespace {

// y = softmax(x @ x^T) over rows: a matmul and a softmax, both parallel on the cpu backend.
Result<Graph> gram_softmax_graph(std::span<const TensorDesc> descs) {
  GraphBuilder b;
  const ValueId x = b.input("x", descs[0]);
  b.output(b.softmax({b.matmul({x, x}, {.trans_b = true})}, {.axis = -1}), "y");
  return b.build();
}

std::vector<float> run_once(Session& s, int64_t rows, int64_t cols) {
  std::vector<float> x(size_t(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 37) % 11) * 0.03f - 0.1f;
  NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {rows, cols}), x.data()}};
  auto out = s.run({&in, 1});
  REQUIRE(out.ok());
  const Tensor& y = (*out)[0].tensor;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.desc().numel());
}

}  // namespace

TEST_CASE("C++ session options: log lines for each new shape and each failed run") {
  std::vector<std::pair<LogLevel, std::string>> lines;
  SessionOptions o;
  o.log = [&](LogLevel level, const std::string& m) { lines.emplace_back(level, m); };
  auto s = Session::create(GraphFactory(gram_softmax_graph), {"x"}, o);
  REQUIRE(s.ok());
  CHECK(lines.empty());
  run_once(**s, 8, 4);
  run_once(**s, 8, 4);  // cached: no line
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].first == LogLevel::info);
  CHECK(lines[0].second.find("planned a new input shape: arena ") != std::string::npos);
  CHECK(lines[0].second.find("x f32[8,4]") != std::string::npos);
  NamedTensorRef wrong{"q", TensorView{TensorDesc(DType::f32, {1, 4}), nullptr}};
  CHECK_FALSE((*s)->run({&wrong, 1}).ok());
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].first == LogLevel::error);
  CHECK(lines[1].second.find("run failed: ") != std::string::npos);
  CHECK(lines[1].second.find("unknown input 'q'") != std::string::npos);
}

TEST_CASE("C++ session options: the determinism switch pins the ISA and refuses threads = 0") {
  SessionOptions o;
  o.deterministic = true;
  o.threads = 0;
  auto refused = Session::create(GraphFactory(gram_softmax_graph), {"x"}, o);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::invalid_argument);
  CHECK(refused.status().message().find("threads = 0") != std::string::npos);
  o.threads = 2;
  auto a = Session::create(GraphFactory(gram_softmax_graph), {"x"}, o);
  REQUIRE(a.ok());
  const std::string desc = (*a)->backend().description();
  CHECK((desc.find("avx2") != std::string::npos || desc.find("scalar") != std::string::npos));
  CHECK(desc.find("avx512") == std::string::npos);
  // threads = 0 with an affinity list is one thread per CPU: machine-independent, allowed.
  o.threads = 0;
  o.affinity = {allowed_cpus()[0]};
  auto per_cpu = Session::create(GraphFactory(gram_softmax_graph), {"x"}, o);
  REQUIRE(per_cpu.ok());
  CHECK((*per_cpu)->backend().description().find("1 thread, CPUs ") != std::string::npos);
}

TEST_CASE("C++ session options: affinity pins without changing results; bad CPUs are named") {
  const std::vector<int> allowed = allowed_cpus();
  auto plain = Session::create(GraphFactory(gram_softmax_graph), {"x"}, {.threads = 2});
  REQUIRE(plain.ok());
  const std::vector<float> expected = run_once(**plain, 96, 40);
  std::vector<std::vector<int>> lists = {{allowed[0]}};
  if (allowed.size() >= 2) lists.push_back({allowed[1], allowed[0]});
  for (const auto& cpus : lists) {
    CAPTURE(cpu_list_text(cpus));
    SessionOptions o;
    o.threads = 2;
    o.affinity = cpus;
    auto s = Session::create(GraphFactory(gram_softmax_graph), {"x"}, o);
    REQUIRE(s.ok());
    CHECK((*s)->backend().description().find("CPUs " + cpu_list_text(cpus)) != std::string::npos);
    const std::vector<float> got = run_once(**s, 96, 40);
    REQUIRE(got.size() == expected.size());
    CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
  }
  SessionOptions bad;
  bad.affinity = {-3};
  auto refused = Session::create(GraphFactory(gram_softmax_graph), {"x"}, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("CPU -3 is not one this process may run on") != std::string::npos);
  bad.backend = "reference";
  bad.affinity = {allowed[0]};
  auto ref = Session::create(GraphFactory(gram_softmax_graph), {"x"}, bad);
  REQUIRE_FALSE(ref.ok());
  CHECK(ref.status().code() == StatusCode::unsupported);
}

TEST_CASE("C++ session options: spinning workers give the same bits; only the cpu backend spins") {
  auto plain = Session::create(GraphFactory(gram_softmax_graph), {"x"}, {.threads = 2});
  REQUIRE(plain.ok());
  const std::vector<float> expected = run_once(**plain, 96, 40);
  SessionOptions o;
  o.threads = 2;
  o.spin_us = 2000;
  auto s = Session::create(GraphFactory(gram_softmax_graph), {"x"}, o);
  REQUIRE(s.ok());
  CHECK((*s)->backend().description().find(", workers spin 2000 us") != std::string::npos);
  for (int run = 0; run < 3; ++run) {  // later runs start while the workers still spin
    const std::vector<float> got = run_once(**s, 96, 40);
    REQUIRE(got.size() == expected.size());
    CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
  }
  o.spin_us = kMaxSpinUs + 1;
  auto too_long = Session::create(GraphFactory(gram_softmax_graph), {"x"}, o);
  REQUIRE_FALSE(too_long.ok());
  CHECK(too_long.status().code() == StatusCode::invalid_argument);
  CHECK(too_long.status().message().find("spin time") != std::string::npos);
  o.spin_us = 100;
  o.backend = "reference";
  auto ref = Session::create(GraphFactory(gram_softmax_graph), {"x"}, o);
  REQUIRE_FALSE(ref.ok());
  CHECK(ref.status().code() == StatusCode::unsupported);
  CHECK(ref.status().message().find("spin_us applies to the cpu backend only") != std::string::npos);
}

TEST_CASE("op registry: the LONGRUN_OPS query agrees with the kernel tables") {
  // Built with the default LONGRUN_OPS=all here; packaging.op_subset builds a subset and
  // checks the error a left-out op gives.
  const bool all = ops_build_setting() == "all";
  for (int k = 0; k < kNumOps; ++k) {
    const OpKind kind = static_cast<OpKind>(k);
    CAPTURE(op_name(kind));
    if (all) CHECK(op_in_build(kind));
    CHECK(op_in_build(kind) == (op_schema(kind).reference != nullptr));
  }
  CHECK_FALSE(op_in_build(static_cast<OpKind>(kNumOps)));
}
