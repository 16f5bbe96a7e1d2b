// The Backend interface: one device + one stream. A backend says which nodes it supports,
// prepares a planned graph (picks kernels, prepacks weights, creates FFT plans, allocates
// the arena and workspaces; no allocation during run) and executes it.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "longrun/graph.h"
#include "longrun/planner.h"
#include "longrun/precision.h"
#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun {

// Host memory for one run: views for the graph inputs and outputs, in the order of
// Graph::inputs() / Graph::outputs(). Output views are written by execute().
struct Bindings {
  std::span<const TensorView> inputs;
  std::span<const TensorView> outputs;
  // Caller memory for the intermediates, used only by a graph prepared with
  // BackendOptions::external_arena (host backends): at least MemoryReport::arena_bytes,
  // 64-byte aligned. Kernel workspaces stay backend-owned.
  std::span<std::byte> arena = {};
};

// Optional per-run hooks.
struct RunHooks {
  // Called after each node with (nodes done, total). Return false to cancel: the run stops
  // before the next node and returns StatusCode::cancelled.
  std::function<bool(int done, int total)> progress;
  // When non-null, receives per-node wall time in milliseconds (index = node).
  std::vector<double>* node_ms = nullptr;
  // When non-null, a backend with a device (cuda) writes the device time of the nodes alone:
  // from the first node's start to the last node's end, measured with device events, without
  // the copies of the inputs and outputs. Host backends leave it untouched.
  double* device_ms = nullptr;
};

// A graph prepared for one backend: kernels chosen, memory allocated.
class Prepared {
 public:
  virtual ~Prepared() = default;
  virtual const MemoryReport& memory_report() const = 0;
};

struct BackendOptions {
  int threads = 1;  // 0: all hardware threads
  // The number format (longrun/precision.h). A backend refuses one it does not implement
  // (unsupported, naming the backend, the precision and the ISA).
  Precision precision = Precision::f32;
  std::string isa;  // cpu only: "", "scalar", "avx2", "avx512" ("" = best / LONGRUN_CPU_ISA)
  int device = 0;   // cuda only
  // Host backends: prepare() allocates no arena; every execute() binds one (Bindings::arena).
  // Other backends reject it (unsupported).
  bool external_arena = false;
  // cpu only: pin the pool's threads to these CPU ids (ThreadPoolOptions::cpus; threads = 0
  // then means one per CPU). Other backends reject a non-empty list (unsupported).
  std::vector<int> affinity;
  // cpu only: keep the pool's workers spinning this many microseconds after each parallel
  // section (ThreadPoolOptions::spin_us). Other backends reject a non-zero value (unsupported).
  int spin_us = 0;
  // cpu only: without `affinity`, a pool of as many threads as this process has CPUs pins
  // each parallel section's threads, the caller to its current CPU and the workers to the
  // others (ThreadPoolOptions::auto_affinity). Other backends ignore it.
  bool auto_affinity = true;
  // cpu only: with isa "" use "avx2" (or "scalar" without AVX2) instead of the best level,
  // ignoring LONGRUN_CPU_ISA, so one binary runs the same kernels on every AVX2 machine.
  bool deterministic = false;
};

// Limits on one preparation.
struct PrepareOptions {
  // >= 0: the arena (unless the caller binds it), kernel workspaces and weight copies the
  // preparation makes may add up to at most this many bytes; a preparation that would need
  // more allocates nothing past the budget and fails with out_of_memory. < 0: no budget.
  int64_t memory_budget_bytes = -1;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Whether the backend has a kernel for this node (dtype and attrs included). When not,
  // *why names the reason.
  virtual bool supports(const Graph& graph, const Node& node, std::string* why) const = 0;
  virtual Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan,
                                                    const PrepareOptions& options) = 0;
  virtual Status execute(Prepared& prepared, const Bindings& bindings, RunHooks* hooks) = 0;
  virtual Status synchronize() = 0;
  // One line for logs: "cpu (avx512, 2 threads)".
  virtual std::string description() const = 0;
};

// "reference", "cpu", "cuda". Unknown names and backends not built or without a device
// give an error that says so.
Result<std::unique_ptr<Backend>> create_backend(std::string_view name, const BackendOptions& options = {});
// Names of the backends compiled into this build (whether or not a device is present).
std::vector<std::string> backend_names();

}  // namespace longrun
