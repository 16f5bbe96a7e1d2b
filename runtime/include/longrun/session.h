// Session: a backend plus the plans for a model's graph, one per distinct input shape
// (bounded LRU cache). Graphs come from a GraphFactory called with the input descs, so a
// model builds the graph for (B, N) once and every later run of that shape reuses it.
//
// Thread safety: run() may be called from several threads; calls on one session are
// serialised (each session owns one arena per plan). Use one session per thread for
// parallel runs; sessions may share one model's weights.
//
// The C API (longrun.h) is this API with handles: every lr_session_options_set_* is a field
// of SessionOptions below (the progress/cancel callback is RunHooks::progress, per run);
// ownership is RAII (std::unique_ptr<Session>, the model's std::shared_ptr).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "longrun/backend.h"
#include "longrun/graph.h"
#include "longrun/planner.h"
#include "longrun/precision.h"
#include "longrun/status.h"
#include "longrun/tensor.h"

namespace longrun {

// Severity of a SessionOptions::log line (same values as lr_log_level).
enum class LogLevel { debug = 0, info = 1, warning = 2, error = 3 };

struct SessionOptions {
  std::string backend = "cpu";  // "reference", "cpu", "cuda"
  // cpu worker threads: 1 .. 1024; 0 = all hardware threads (with `affinity`: one per CPU).
  int threads = 1;
  std::string isa;  // cpu only: force "scalar", "avx2" or "avx512"
  // The number format (longrun/precision.h): f32 (default) or int8 (cpu backend, AVX2 and
  // up: linear layers on the int8 GEMM). Others fail at creation with unsupported.
  Precision precision = Precision::f32;
  // cpu only: pin the pool's threads, the calling thread included while it runs kernels, to
  // these CPU ids (thread i on affinity[i % size]; the caller's own mask is restored after
  // each parallel section). Each id must be one this process may use: otherwise create()
  // fails with invalid_argument naming the CPU. Empty: no list (`auto_affinity` below
  // decides). Results do not depend on it (only on the thread count).
  std::vector<int> affinity;
  // cpu only: after each parallel section the pool's workers keep busy-waiting for this many
  // microseconds (0 .. 1000000) instead of going back to sleep, so a kernel that starts
  // within that window runs on every thread at once. Waking a sleeping worker takes tens of
  // microseconds to milliseconds on a VM, longer than many kernels of a short run
  // (docs/threads.md#spinning). Costs up to threads - 1 CPUs busy for that long after every
  // parallel section. 0 (default): workers sleep when idle. Results do not depend on it.
  // Use it with `affinity` on VMs: unpinned, a spinning worker was measured sharing the
  // caller's vCPU and running a kernel slower than one thread.
  int spin_us = 0;
  // cpu only: without `affinity`, a pool of as many threads as this process has CPUs (threads
  // = 0, or that count) pins each parallel section's threads while it runs: the calling
  // thread to the CPU it is on (it is never moved) and each worker to another of those CPUs,
  // restoring every mask after. Unpinned, a woken worker was measured landing on the caller's
  // own vCPU (docs/threads.md#auto-affinity). false: no pinning without a list.
  // Results do not depend on it.
  bool auto_affinity = true;
  // The determinism switch (docs/usage.md#determinism): the cpu ISA defaults to "avx2"
  // ("scalar" without AVX2) instead of the best level, and threads = 0 without `affinity` is
  // refused (invalid_argument), so the same options run the same kernels with the same work
  // split on every AVX2 machine.
  bool deterministic = false;
  // Receives one line per event, on the thread of the call: each input shape the session
  // plans (arena and workspace bytes) and each failed run. May be empty.
  std::function<void(LogLevel level, const std::string& message)> log;
  size_t plan_cache_capacity = 8;
  PlannerOptions planner;
  // Host backends (reference, cpu): the caller provides the intermediates' arena on every
  // run (run(..., arena)); memory_report() says how many bytes a shape needs.
  bool external_arena = false;
  // When > 0, an input shape whose arena + kernel workspaces + the weight copies its
  // preparation makes (the cpu backend's prepacked GEMM weights, shared with the session's
  // and other sessions' earlier plans, which then count 0) would exceed this many bytes fails
  // with out_of_memory: an arena over the limit is never allocated, workspaces and weight
  // copies are freed again, and the session stays usable.
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
