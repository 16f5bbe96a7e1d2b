// Session: a backend plus the plans for a model's graph, one per distinct input shape
// (bounded LRU cache). Graphs come from a GraphFactory called with the input descs, so a
// model builds the graph for (B, N) once and every later run of that shape reuses it.
//
// Thread safety: run() may be called from several threads; calls on one session are
// serialised (each session owns one arena per plan). Use one session per thread for
// parallel runs; sessions may share one model's weights.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "longrun/backend.h"
#include "longrun/graph.h"
#include "longrun/planner.h"
#include "longrun/status.h"
#include "longrun/tensor.h"

namespace longrun {

struct SessionOptions {
  std::string backend = "cpu";  // "reference", "cpu", "cuda"
  int threads = 1;              // 0: all hardware threads
  std::string isa;              // cpu only: force "scalar", "avx2" or "avx512"
  size_t plan_cache_capacity = 8;
  PlannerOptions planner;
  // Host backends (reference, cpu): the caller provides the intermediates' arena on every
  // run (run(..., arena)); memory_report() says how many bytes a shape needs.
  bool external_arena = false;
  // When > 0, an input shape whose arena + kernel workspaces would exceed this many bytes
  // fails with out_of_memory (nothing is allocated for it; the session stays usable).
  int64_t memory_limit_bytes = 0;
};

// Builds the graph for the given input descs (one per input name, in order).
using GraphFactory = std::function<Result<Graph>(std::span<const TensorDesc> input_descs)>;

class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // A session over one fixed graph (inputs must match its shapes exactly).
  static Result<std::unique_ptr<Session>> create(Graph graph, const SessionOptions& options = {});
  // A session over a factory; `input_names` fixes the order of the descs it receives.
  static Result<std::unique_ptr<Session>> create(GraphFactory factory, std::vector<std::string> input_names,
                                                 const SessionOptions& options = {});

  // Runs with named inputs (every graph input exactly once) and returns the named outputs
  // in graph output order.
  Result<std::vector<NamedTensor>> run(std::span<const NamedTensorRef> inputs, RunHooks* hooks = nullptr);
  // Same, with the caller's arena (SessionOptions::external_arena): at least
  // memory_report(descs)->arena_bytes bytes, 64-byte aligned, not used by another run at the
  // same time.
  Result<std::vector<NamedTensor>> run(std::span<const NamedTensorRef> inputs, RunHooks* hooks,
                                       std::span<std::byte> arena);

  // Plans (or fetches the cached plan) for these input descs without running.
  Result<MemoryReport> memory_report(std::span<const TensorDesc> input_descs);
  // The graph that would run for these input descs.
  Result<const Graph*> graph_for(std::span<const TensorDesc> input_descs);

  const Backend& backend() const;
  size_t cached_plans() const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace longrun
