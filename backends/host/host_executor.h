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

class HostPrepared final : public Prepared {
 public:
  const MemoryReport& memory_report() const override { return report; }

  const Graph* graph = nullptr;  // owned by the caller (Session), outlives this
  Plan plan;
  std::vector<KernelFn> kernels;                  // per node; nullptr for skipped (view) nodes
  std::vector<std::shared_ptr<void>> node_state;  // per node: the kernel's prepare result
  std::shared_ptr<std::byte> arena;               // null when the caller binds the arena (external_arena)
  bool external_arena = false;
  MemoryReport report;
  // Scratch for execute (per-run pointers); the caller serialises runs of one Prepared.
  std::vector<void*> value_data;
  std::vector<TensorView> in_views, out_views;
};

// Allocates the arena (64-byte aligned, zero-filled once; not when external_arena: then
// every execute binds one), picks every node's kernel and runs the kernels' prepare steps.
Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan, KernelPicker pick,
                                          const void* backend_state, ThreadPool* pool,
                                          bool external_arena = false);

// Memory a kernel's prepare step allocates, counted into the prepared graph's MemoryReport
// (and so into a session's memory limit): kernels call these from their prepare step; they
// do nothing outside host::prepare (direct kernel tests).
//   workspace: per-node scratch (blocks, plans, per-run packing buffers);
//   weight copy: a copy of a weight this preparation made (prepacked GEMM weights; a copy
//   shared with an earlier preparation is not counted again).
void note_workspace_bytes(int64_t bytes);
void note_weight_copy_bytes(int64_t bytes);

// Validates the bindings against the graph and runs every node in order on `pool`.
Status execute(Prepared& prepared, const Bindings& bindings, RunHooks* hooks, ThreadPool* pool);

}  // namespace longrun::host
