// Session: backends by name, plan cache per input shape, input validation, hooks.
#include "longrun/session.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace longrun;

namespace {

// y = softmax(x * 0.5) along the last axis, for any [B, N] input.
Result<Graph> softmax_graph(std::span<const TensorDesc> descs) {
  GraphBuilder b;
  const ValueId x = b.input("x", descs[0]);
  b.output(b.softmax({b.scale({x}, {.scale = 0.5f})}, {.axis = -1}), "y");
  return b.build();
}

}  // namespace

TEST_CASE("unknown and unavailable backends give clear errors") {
  auto s = Session::create(GraphFactory(softmax_graph), {"x"}, {.backend = "tpu"});
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == StatusCode::not_found);
  CHECK(s.status().message().find("tpu") != std::string::npos);
  CHECK(s.status().message().find("reference") != std::string::npos);

  auto c = create_backend("cuda");
  if (!c.ok()) {  // without a GPU or without nvcc: unsupported with the reason, never a crash
    CHECK(c.status().code() == StatusCode::unsupported);
    CHECK(c.status().message().find("cuda") != std::string::npos);
  }
  auto bad_isa = create_backend("cpu", {.threads = 1, .isa = "sse9"});
  REQUIRE_FALSE(bad_isa.ok());
  CHECK(bad_isa.status().code() == StatusCode::invalid_argument);
}

TEST_CASE("session runs on reference and cpu and caches one plan per shape") {
  for (const char* backend : {"reference", "cpu"}) {
    CAPTURE(backend);
    auto s = Session::create(GraphFactory(softmax_graph), {"x"}, {.backend = backend, .threads = 2});
    REQUIRE(s.ok());
    for (int64_t n : {3, 5, 3}) {
      std::vector<float> x(size_t(2 * n));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 3);
      NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {2, n}), x.data()}};
      auto out = (*s)->run({&in, 1});
      REQUIRE(out.ok());
      REQUIRE(out->size() == 1);
      CHECK((*out)[0].name == "y");
      const Tensor& y = (*out)[0].tensor;
      CHECK(y.desc() == TensorDesc(DType::f32, {2, n}));
      for (int r = 0; r < 2; ++r) {
        double sum = 0, denom = 0;
        for (int64_t j = 0; j < n; ++j) denom += std::exp(0.5 * x[size_t(r * n + j)]);
        for (int64_t j = 0; j < n; ++j) {
          const double want = std::exp(0.5 * x[size_t(r * n + j)]) / denom;
          CHECK(y.data<float>()[r * n + j] == doctest::Approx(want).epsilon(1e-6));
          sum += y.data<float>()[r * n + j];
        }
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
      }
    }
    CHECK((*s)->cached_plans() == 2);
  }
}

TEST_CASE("the plan cache is bounded") {
  auto s =
      Session::create(GraphFactory(softmax_graph), {"x"}, {.backend = "reference", .plan_cache_capacity = 2});
  REQUIRE(s.ok());
  std::vector<float> x(64, 1.0f);
  for (int64_t n : {1, 2, 3, 4, 5}) {
    NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {1, n}), x.data()}};
    REQUIRE((*s)->run({&in, 1}).ok());
  }
  CHECK((*s)->cached_plans() == 2);
}

TEST_CASE("run validates named inputs") {
  auto s = Session::create(GraphFactory(softmax_graph), {"x"}, {.backend = "reference"});
  REQUIRE(s.ok());
  std::vector<float> x(4, 0.0f);
  NamedTensorRef wrong{"q", TensorView{TensorDesc(DType::f32, {1, 4}), x.data()}};
  auto r = (*s)->run({&wrong, 1});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("unknown input 'q'") != std::string::npos);
  auto none = (*s)->run({});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("missing input 'x'") != std::string::npos);
  NamedTensorRef null_data{"x", TensorView{TensorDesc(DType::f32, {1, 4}), nullptr}};
  auto n = (*s)->run({&null_data, 1});
  REQUIRE_FALSE(n.ok());
  CHECK(n.status().message().find("null") != std::string::npos);
  NamedTensorRef twice[2] = {{"x", TensorView{TensorDesc(DType::f32, {1, 4}), x.data()}},
                             {"x", TensorView{TensorDesc(DType::f32, {1, 4}), x.data()}}};
  CHECK_FALSE((*s)->run({twice, 2}).ok());
}

TEST_CASE("a fixed-graph session rejects other shapes") {
  GraphBuilder b;
  const ValueId x = b.input("x", TensorDesc(DType::f32, {2, 2}));
  b.output(b.relu({x}), "y");
  auto g = b.build();
  REQUIRE(g.ok());
  auto s = Session::create(std::move(g).value(), {.backend = "cpu"});
  REQUIRE(s.ok());
  std::vector<float> data(6, -1.0f);
  NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {2, 3}), data.data()}};
  auto r = (*s)->run({&in, 1});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("f32[2,2]") != std::string::npos);
}

TEST_CASE("hooks: per-node time and cancellation") {
  auto s = Session::create(GraphFactory(softmax_graph), {"x"}, {.backend = "reference"});
  REQUIRE(s.ok());
  std::vector<float> x(8, 1.0f);
  NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {2, 4}), x.data()}};
  std::vector<double> ms;
  RunHooks timing;
  timing.node_ms = &ms;
  REQUIRE((*s)->run({&in, 1}, &timing).ok());
  CHECK(ms.size() == 2);
  RunHooks cancel;
  cancel.progress = [](int done, int) { return done < 1; };
  auto r = (*s)->run({&in, 1}, &cancel);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::cancelled);
  CHECK((*s)->run({&in, 1}).ok());  // the session stays usable
}
