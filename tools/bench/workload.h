// What `longrun-bench models` times: a graph with its inputs bound to host buffers (in
// Graph::inputs() order) and the bytes of its weights.
#pragma once

#include <cstdint>
#include <vector>

#include "bench_case.h"
#include "longrun/graph.h"

namespace longrun::bench {

struct Workload {
  Graph graph;
  std::vector<TensorView> inputs;  // Graph::inputs() order
  std::vector<BufferPtr> owners;   // memory behind the inputs (and weights made here)
  int64_t weight_bytes = 0;
};

}  // namespace longrun::bench
