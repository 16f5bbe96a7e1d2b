// A graph prepared once on one engine, with host input and output buffers bound, so that a
// timed run is exactly what Session::run does per call minus its per-call bookkeeping:
// Backend::execute + Backend::synchronize. Graph build, planning and the backend's prepare
// step (weight prepacking, FFT plans, arena allocation) happen in create(), untimed.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench_case.h"
#include "longrun/backend.h"
#include "longrun/planner.h"

namespace longrun::bench {

// The backend for an engine ("" isa = the backend's default).
Result<std::unique_ptr<Backend>> make_backend(const Engine& engine);

// What the backend says it runs as: the ISA ("-" when the backend has none) and the thread
// count, read from Backend::description() ("cpu (avx512, 2 threads)"), which is the only
// public place that says which ISA "best" resolved to.
struct EngineLabel {
  std::string isa = "-";
  int threads = 1;
};
EngineLabel engine_label(const Backend& backend, const Engine& engine);

// The pool settings for a title: " pinned to CPUs 0-1, workers spin 500 us" (each part
// only when set; ", no auto affinity" when that is off without a list; "" for none).
std::string pool_settings_text(const std::vector<int>& cpus, int spin_us, bool auto_affinity);

class GraphRun {
 public:
  // Copies the graph, plans it, checks every node is supported and prepares it. `inputs`
  // (Graph::inputs() order) must stay valid while the GraphRun lives. host_budget >= 0: the
  // arena, the output buffers, kernel workspaces and weight copies may take at most this many
  // bytes of host memory; a plan that needs more fails with out_of_memory before allocating
  // it (the prepare step's memory budget covers what only it knows).
  static Result<std::unique_ptr<GraphRun>> create(const Graph& graph, std::span<const TensorView> inputs,
                                                  const Engine& engine, int64_t host_budget = -1);
  ~GraphRun();

  Status run();
  // The device time of the last run's nodes (RunHooks::device_ms), or -1 for a host backend.
  double last_device_ms() const { return last_device_ms_; }
  const Backend& backend() const { return *backend_; }
  // The prepared graph's memory report: the planner's (arena, peak live bytes, weights, I/O)
  // with the backend's kernel workspaces and weight copies.
  const MemoryReport& memory() const { return memory_; }
  // The prepared graph and the host output buffers (Graph::outputs() order) of the last run.
  const Graph& graph() const { return *graph_; }
  const std::vector<TensorView>& outputs() const { return outputs_; }

 private:
  GraphRun() = default;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Graph> graph_;  // stable address: the prepared state may refer to it
  std::unique_ptr<Prepared> prepared_;
  std::vector<TensorView> inputs_;
  std::vector<TensorView> outputs_;
  std::vector<BufferPtr> output_buffers_;
  MemoryReport memory_;
  double last_device_ms_ = -1;
};

}  // namespace longrun::bench
