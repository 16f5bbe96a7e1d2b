// The executor shared by the host-memory backends (reference, cpu): resolves every value
// of a planned graph to a host pointer (caller bindings for inputs/outputs, the mapped
// weights, the arena for intermediates) and runs one kernel per node.
#pragma once

#include <memory>
#include <vector>

#include "longrun/backend.h"
#include "longrun/ops/schema.h"
#include "longrun/thread_pool.h"

namespace longrun::host {

// A host kernel: the function that runs a node and, optionally, a step that runs once per
// node at prepare time (prepack weights, create FFT plans, reserve scratch). Its result is
// handed to every run as KernelArgs::prepared and lives as long as the prepared graph.
using KernelPrepareFn = Result<std::shared_ptr<void>> (*)(const Graph& graph, const Node& node,
                                                          ThreadPool* pool);
struct HostKernel {
  KernelFn run = nullptr;
  KernelPrepareFn prepare = nullptr;
  constexpr HostKernel() = default;
  constexpr HostKernel(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): table rows
  constexpr HostKernel(KernelFn r, KernelPrepareFn p = nullptr) : run(r), prepare(p) {}  // NOLINT
  explicit operator bool() const { return run != nullptr; }
};

// Picks the kernel for a node; returns an empty HostKernel (and sets *why) when there is none.
using KernelPicker = HostKernel (*)(const Node& node, const void* backend_state, std::string* why);

class SharedScratch;

class HostPrepared final : public Prepared {
 public:
  const MemoryReport& memory_report() const override { return report; }

  const Graph* graph = nullptr;  // owned by the caller (Session), outlives this
  Plan plan;
  std::vector<KernelFn> kernels;                  // per node; nullptr for skipped (view) nodes
  std::vector<std::shared_ptr<void>> node_state;  // per node: the kernel's prepare result
  std::shared_ptr<std::byte> arena;               // null when the caller binds the arena (external_arena)
  std::shared_ptr<SharedScratch> scratch;         // the nodes' shared run-time scratch (request_scratch)
  bool external_arena = false;
  MemoryReport report;
  // Scratch for execute (per-run pointers); the caller serialises runs of one Prepared.
  std::vector<void*> value_data;
  std::vector<TensorView> in_views, out_views;
};

// Allocates the arena (64-byte aligned, zero-filled once; not when external_arena: then
// every execute binds one), picks every node's kernel, runs the kernels' prepare steps and
// allocates their shared scratch. With memory_budget_bytes >= 0 (PrepareOptions) nothing is
// allocated past the budget: the arena, each reservation below and the scratch are checked
// before they are allocated, and the first that would not fit fails with out_of_memory.
Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan, KernelPicker pick,
                                          const void* backend_state, ThreadPool* pool,
                                          bool external_arena = false, int64_t memory_budget_bytes = -1);

// Memory a kernel's prepare step is about to allocate, reserved before it allocates:
// counted into the prepared graph's MemoryReport and checked against its memory budget
// (out_of_memory naming the node when it would not fit). Outside host::prepare (direct
// kernel tests) they allow anything.
//   workspace: per-node state that is not shared scratch (FFT tables, selection scratch);
//   weight copy: a copy of a weight this preparation makes (prepacked GEMM weights; a copy
//   shared with an earlier preparation is not counted again). transient_bytes: the sum of
//   the buffers held at once while the copy is made (a quantized weight's f32 values, a bf16
//   route's rounded values, an int8 route's stored or per-thread quantization buffers),
//   checked against the budget on top of the copy, as the peak, and not counted after.
Status reserve_workspace_bytes(int64_t bytes);
Status reserve_weight_copy_bytes(int64_t bytes, int64_t transient_bytes = 0);

// Run-time scratch shared by the nodes of one prepared graph. Nodes run one at a time and
// runs of a prepared graph are serialised, so one buffer at the largest request serves every
// node: per-node buffers (a GEMM's packed activation B is up to 16 MiB) would add up to
// hundreds of MiB in a 6-layer model.
class SharedScratch {
 public:
  // 64-byte aligned, at least the requesting node's bytes; valid while the prepared graph is.
  float* floats() const { return static_cast<float*>(data_.get()); }
  int64_t bytes() const { return bytes_; }
  // Allocates `bytes` (once, by host::prepare or request_scratch).
  Status allocate(int64_t bytes);

 private:
  std::shared_ptr<void> data_;
  int64_t bytes_ = 0;
};

// A prepare step's request for `bytes` of run-time scratch. Inside host::prepare: the
// prepared graph's shared buffer, allocated once every node is prepared at the largest
// request and counted once as workspace; outside (direct kernel tests): a buffer of its own.
Result<std::shared_ptr<const SharedScratch>> request_scratch(int64_t bytes);

// invalid_argument unless the bindings have one view per graph input and output, each with
// its value's dims and dtype, contiguous, with data. Every backend's execute() starts with it.
Status check_bindings(const Graph& graph, const Bindings& bindings);

// Validates the bindings against the graph and runs every node in order on `pool`.
Status execute(Prepared& prepared, const Bindings& bindings, RunHooks* hooks, ThreadPool* pool);

}  // namespace longrun::host
