// GraphBuilder (with its folding of reshaped weights), Graph::verify and their error messages.
#include "longrun/graph.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "longrun/planner.h"

using namespace longrun;

TEST_CASE("builder records nodes and names outputs") {
  GraphBuilder b;
  const ValueId x = b.input("x", TensorDesc(DType::f32, {2, 3}));
  const ValueId y = b.relu({x});
  const ValueId z = b.scale({y}, {.scale = 2.0f});
  b.output(z, "z");
  auto g = b.build();
  REQUIRE(g.ok());
  CHECK(g->nodes().size() == 2);
  CHECK(g->inputs().size() == 1);
  CHECK(g->find_output("z") == z);
  CHECK(g->find_input("x") == x);
  CHECK(g->find_input("nope") == kNoValue);
  CHECK(g->value(z).desc == TensorDesc(DType::f32, {2, 3}));
  CHECK(g->to_string().find("scale") != std::string::npos);
}

TEST_CASE("builder errors are sticky and name the node") {
  GraphBuilder b;
  const ValueId x = b.input("x", TensorDesc(DType::f32, {2, 3}));
  const ValueId y = b.input("y", TensorDesc(DType::f32, {4, 5}));
  const ValueId bad = b.add({x, y}, {}, "my_add");
  CHECK(bad == kNoValue);
  const ValueId after = b.relu({bad});  // does nothing, keeps the first error
  CHECK(after == kNoValue);
  auto g = b.build();
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().code() == StatusCode::invalid_argument);
  CHECK(g.status().message().find("my_add") != std::string::npos);
}

TEST_CASE("graph outputs must be produced by nodes, once, with unique names") {
  {
    GraphBuilder b;
    const ValueId x = b.input("x", TensorDesc(DType::f32, {2}));
    b.output(x, "x_out");
    CHECK_FALSE(b.build().ok());
  }
  {
    GraphBuilder b;
    const ValueId x = b.input("x", TensorDesc(DType::f32, {2}));
    b.relu({x});
    auto g = b.build();
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().message().find("no outputs") != std::string::npos);
  }
  {
    GraphBuilder b;
    const ValueId x = b.input("x", TensorDesc(DType::f32, {2}));
    b.output(b.relu({x}), "o");
    b.output(b.exp({x}), "o");
    auto g = b.build();
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().message().find("duplicate") != std::string::npos);
  }
  {
    GraphBuilder b;
    b.input("x", TensorDesc(DType::f32, {2}));
    b.input("x", TensorDesc(DType::f32, {2}));
    CHECK_FALSE(b.build().ok());
  }
}

TEST_CASE("weights need data and keep their owner alive") {
  auto data = std::make_shared<std::vector<float>>(4, 1.0f);
  std::weak_ptr<std::vector<float>> watch = data;
  {
    GraphBuilder b;
    const ValueId x = b.input("x", TensorDesc(DType::f32, {4}));
    const ValueId w = b.weight("w", TensorDesc(DType::f32, {4}), data->data(), data);
    b.output(b.add({x, w}), "y");
    auto g = b.build();
    REQUIRE(g.ok());
    data.reset();
    CHECK_FALSE(watch.expired());  // the graph owns it now
  }
  CHECK(watch.expired());
  GraphBuilder b;
  b.weight("w", TensorDesc(DType::f32, {4}), nullptr);
  auto g = b.build();
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().message().find("no data") != std::string::npos);
}

TEST_CASE("one builder method per op in the list") {
  // Every op has a name and a builder method; op_name round-trips through the table.
#define LR_OP(name, Attrs) CHECK(op_name(OpKind::name) == #name);
#include "longrun/ops/op_list.inc"
  CHECK(kNumOps >= 30);
}

TEST_CASE("a reshape of a weight becomes a weight over the same bytes") {
  std::vector<float> w(24, 1.0f);
  auto shape = [](std::initializer_list<int64_t> dims) {
    ReshapeAttrs a;
    for (int64_t d : dims) a.dims[size_t(a.rank++)] = d;
    return a;
  };
  GraphBuilder b;
  const ValueId x = b.input("x", TensorDesc(DType::f32, {3, 6}));
  const ValueId k = b.weight("kernel", TensorDesc(DType::f32, {6, 2, 2}), w.data());
  const ValueId k2 = b.reshape({k}, shape({6, 4}), "view");
  const ValueId k3 = b.reshape({b.reshape({k}, shape({24}))}, shape({6, 4}));  // a chain folds too
  b.output(b.matmul({x, k2}), "y");
  b.output(b.matmul({x, k3}), "y3");
  b.output(b.reshape({k}, shape({4, 6})), "k_out");  // a graph output stays a node
  auto g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  REQUIRE(g->nodes().size() == 3);  // two matmuls and the output reshape
  CHECK(g->nodes()[0].kind == OpKind::matmul);
  CHECK(g->nodes()[2].kind == OpKind::reshape);
  for (const ValueId v : {k2, k3}) {
    const Value& folded = g->value(v);
    CHECK(folded.role == ValueRole::weight);
    CHECK(folded.weight_data == w.data());
    CHECK(folded.producer == -1);
    CHECK(folded.desc == TensorDesc(DType::f32, {6, 4}));
  }
  CHECK(g->value(k2).name == "kernel:view");
  for (size_t n = 0; n < g->nodes().size(); ++n)  // producers renumbered
    for (ValueId o : g->nodes()[n].outputs) CHECK(g->value(o).producer == int(n));
  CHECK(g->value(g->find_output("y")).producer == 0);
  // The planner counts the weight's bytes once.
  auto plan = plan_memory(*g);
  REQUIRE(plan.ok());
  CHECK(plan->report.weight_bytes_mapped == 24 * int64_t(sizeof(float)));
}
