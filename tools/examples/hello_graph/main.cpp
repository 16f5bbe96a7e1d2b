// Builds a graph (softmax(x * w^T + b) over a small batch), picks a backend by name,
// creates a session, binds host tensors, runs, reads the outputs and prints the memory
// report. Uses only the installed public headers.
#include <longrun/graph.h>
#include <longrun/session.h>

#include <cstdio>
#include <memory>
#include <vector>

int main(int argc, char** argv) {
  using namespace longrun;
  const char* backend = argc > 1 ? argv[1] : "cpu";

  // Weights: any memory that outlives the graph; the shared_ptr ties them to it.
  auto w = std::make_shared<std::vector<float>>(std::vector<float>{1, 0, 0, 1, 1, 1});  // [3, 2]
  auto bias = std::make_shared<std::vector<float>>(std::vector<float>{0, 0, -1});

  GraphBuilder b;
  const ValueId x = b.input("x", TensorDesc(DType::f32, {2, 2}));
  const ValueId wv = b.weight("w", TensorDesc(DType::f32, {3, 2}), w->data(), w);
  const ValueId bv = b.weight("b", TensorDesc(DType::f32, {3}), bias->data(), bias);
  const ValueId logits = b.matmul({x, wv, bv}, {.trans_b = true, .has_bias = true});
  b.output(b.softmax({logits}, {.axis = -1}), "probs");
  auto graph = b.build();
  if (!graph.ok()) {
    std::fprintf(stderr, "build: %s\n", graph.status().to_string().c_str());
    return 1;
  }

  SessionOptions options;
  options.backend = backend;
  auto session = Session::create(std::move(graph).value(), options);
  if (!session.ok()) {
    std::fprintf(stderr, "session: %s\n", session.status().to_string().c_str());
    return 1;
  }
  std::vector<float> xs = {1, 2, 3, 4};
  NamedTensorRef in{"x", TensorView{TensorDesc(DType::f32, {2, 2}), xs.data()}};
  auto out = (*session)->run({&in, 1});
  if (!out.ok()) {
    std::fprintf(stderr, "run: %s\n", out.status().to_string().c_str());
    return 1;
  }
  const Tensor& p = (*out)[0].tensor;
  std::printf("%s on %s:\n", (*out)[0].name.c_str(), (*session)->backend().description().c_str());
  for (int r = 0; r < 2; ++r)
    std::printf("  [%.6f %.6f %.6f]\n", p.data<float>()[r * 3], p.data<float>()[r * 3 + 1],
                p.data<float>()[r * 3 + 2]);
  auto report = (*session)->memory_report({&in.view.desc, 1});
  if (report.ok()) std::printf("%s", report->to_string().c_str());
  return 0;
}
