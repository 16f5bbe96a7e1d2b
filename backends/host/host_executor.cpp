#include "host/host_executor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

namespace longrun::host {

namespace {

Status check_binding(const Value& value, const TensorView& view, const char* what) {
  if (!view.desc.same_shape(value.desc) || view.desc.dtype() != value.desc.dtype())
    return invalid_argument(std::string(what) + " '" + value.name + "': expected " + value.desc.to_string() +
                            ", found " + view.desc.to_string());
  if (!view.desc.is_contiguous())
    return invalid_argument(std::string(what) + " '" + value.name + "' must be contiguous, found " +
                            view.desc.to_string());
  if (view.data == nullptr && value.desc.numel() > 0)
    return invalid_argument(std::string(what) + " '" + value.name + "' has a null data pointer");
  return {};
}

}  // namespace

Status check_bindings(const Graph& g, const Bindings& bindings) {
  if (bindings.inputs.size() != g.inputs().size() || bindings.outputs.size() != g.outputs().size())
    return invalid_argument("bindings: expected " + std::to_string(g.inputs().size()) + " inputs and " +
                            std::to_string(g.outputs().size()) + " outputs, found " +
                            std::to_string(bindings.inputs.size()) + " and " +
                            std::to_string(bindings.outputs.size()));
  for (size_t i = 0; i < g.inputs().size(); ++i)
    LR_RETURN_IF_ERROR(check_binding(g.value(g.inputs()[i]), bindings.inputs[i], "input"));
  for (size_t i = 0; i < g.outputs().size(); ++i)
    LR_RETURN_IF_ERROR(check_binding(g.value(g.outputs()[i]), bindings.outputs[i], "output"));
  return {};
}

namespace {

// The preparation running on this thread (null outside host::prepare): where kernels'
// allocations are counted and their scratch requests collected.
struct Preparing {
  MemoryReport* report = nullptr;
  std::shared_ptr<SharedScratch> scratch;
  int64_t scratch_bytes = 0;  // the largest request so far
  int64_t budget = -1;        // bytes; < 0: none
  int64_t arena = 0;          // counted against the budget (0 with an external arena)

  int64_t used() const {
    return arena + report->workspace_bytes + report->weight_bytes_copied + scratch_bytes;
  }
  // out_of_memory when `extra` more bytes (of `what`) would pass the budget.
  Status check(int64_t extra, const char* what) const {
    if (budget < 0 || used() + extra <= budget) return {};
    return out_of_memory(std::string(what) + " of " + std::to_string(extra) + " bytes would take arena " +
                         std::to_string(arena) + " + workspaces " +
                         std::to_string(report->workspace_bytes + scratch_bytes) + " + weight copies " +
                         std::to_string(report->weight_bytes_copied) + " to " +
                         std::to_string(used() + extra) + " bytes, over the memory budget of " +
                         std::to_string(budget) + " bytes");
  }
};
thread_local Preparing* preparing = nullptr;

struct PreparingScope {
  explicit PreparingScope(Preparing* p) { preparing = p; }
  ~PreparingScope() { preparing = nullptr; }
  PreparingScope(const PreparingScope&) = delete;
  PreparingScope& operator=(const PreparingScope&) = delete;
};

}  // namespace

Status reserve_workspace_bytes(int64_t bytes) {
  if (preparing == nullptr) return {};
  LR_RETURN_IF_ERROR(preparing->check(bytes, "a workspace"));
  preparing->report->workspace_bytes += bytes;
  return {};
}
Status reserve_weight_copy_bytes(int64_t bytes, int64_t transient_bytes) {
  if (preparing == nullptr) return {};
  int64_t peak = 0;
  if (transient_bytes < 0 || __builtin_add_overflow(bytes, transient_bytes, &peak))
    return internal_error("reserve_weight_copy_bytes: " + std::to_string(bytes) + " + " +
                          std::to_string(transient_bytes) + " transient bytes");
  LR_RETURN_IF_ERROR(preparing->check(
      peak, transient_bytes > 0 ? "a weight copy with the buffers held while it is made (transient)"
                                : "a weight copy"));
  preparing->report->weight_bytes_copied += bytes;
  return {};
}

// Mapped straight from the kernel, not from the heap: a plan's scratch has a size of its own
// (it follows the input shape), and heap blocks of many sizes, freed as plans are evicted,
// would fragment the heap and let resident memory wander; a mapping goes back whole, and
// pages a run never touches are never resident.
Status SharedScratch::allocate(int64_t bytes) {
  bytes_ = bytes;
  if (bytes <= 0) return {};
  void* p = ::mmap(nullptr, size_t(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return out_of_memory("cannot map " + std::to_string(bytes) +
                         " bytes of kernel scratch: " + std::strerror(errno));
  data_ = std::shared_ptr<void>(p, [size = size_t(bytes)](void* q) { ::munmap(q, size); });
  return {};
}

Result<std::shared_ptr<const SharedScratch>> request_scratch(int64_t bytes) {
  if (preparing == nullptr) {
    auto own = std::make_shared<SharedScratch>();
    LR_RETURN_IF_ERROR(own->allocate(bytes));
    return std::shared_ptr<const SharedScratch>(std::move(own));
  }
  if (bytes > preparing->scratch_bytes) {
    LR_RETURN_IF_ERROR(preparing->check(bytes - preparing->scratch_bytes, "kernel scratch"));
    preparing->scratch_bytes = bytes;
  }
  return std::shared_ptr<const SharedScratch>(preparing->scratch);
}

Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan, KernelPicker pick,
                                          const void* backend_state, ThreadPool* pool, bool external_arena,
                                          int64_t memory_budget_bytes) {
  auto p = std::make_unique<HostPrepared>();
  p->external_arena = external_arena;
  p->graph = &graph;
  p->plan = plan;
  p->report = plan.report;
  const auto& nodes = graph.nodes();
  p->kernels.resize(nodes.size(), nullptr);
  p->node_state.resize(nodes.size());
  p->scratch = std::make_shared<SharedScratch>();
  Preparing counting{&p->report, p->scratch, 0, memory_budget_bytes, 0};
  // Budget order: the arena first (allocated last, but planned already), then each node's
  // reservations as its prepare step makes them, then the shared scratch.
  LR_RETURN_IF_ERROR(counting.check(external_arena ? 0 : plan.report.arena_bytes, "the arena"));
  counting.arena = external_arena ? 0 : plan.report.arena_bytes;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (plan.skip_node[n]) continue;
    std::string why;
    const HostKernel k = pick(nodes[n], backend_state, &why);
    const std::string where = "node '" + nodes[n].name + "' (" + std::string(op_name(nodes[n].kind)) + ")";
    if (!k) return unsupported(where + ": no kernel: " + why);
    p->kernels[n] = k.run;
    if (k.prepare) {
      PreparingScope scope(&counting);
      auto state = k.prepare(graph, nodes[n], pool);
      if (!state.ok()) return state.status().with_context(where);
      p->node_state[n] = std::move(state).value();
    }
  }
  LR_RETURN_IF_ERROR(p->scratch->allocate(counting.scratch_bytes));
  p->report.workspace_bytes += counting.scratch_bytes;
  const size_t bytes = size_t(plan.report.arena_bytes);
  if (bytes > 0 && !external_arena) {
    std::byte* a = static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{64}, std::nothrow));
    if (!a) return out_of_memory("cannot allocate the " + std::to_string(bytes) + "-byte arena");
    std::memset(a, 0, bytes);
    p->arena =
        std::shared_ptr<std::byte>(a, [](std::byte* q) { ::operator delete[](q, std::align_val_t{64}); });
  }
  p->value_data.assign(graph.values().size(), nullptr);
  return std::unique_ptr<Prepared>(std::move(p));
}

Status execute(Prepared& prepared, const Bindings& bindings, RunHooks* hooks, ThreadPool* pool) {
  auto& p = static_cast<HostPrepared&>(prepared);
  const Graph& g = *p.graph;
  LR_RETURN_IF_ERROR(check_bindings(g, bindings));
  std::byte* arena = p.arena.get();
  if (p.external_arena) {
    const int64_t need = p.plan.report.arena_bytes;
    if (need > 0 && (bindings.arena.data() == nullptr || int64_t(bindings.arena.size()) < need))
      return invalid_argument("arena: this plan needs " + std::to_string(need) +
                              " bytes of caller memory, found " + std::to_string(bindings.arena.size()));
    if (reinterpret_cast<uintptr_t>(bindings.arena.data()) % 64 != 0)
      return invalid_argument("arena: the caller's arena must be 64-byte aligned");
    arena = bindings.arena.data();
  } else if (!bindings.arena.empty()) {
    return invalid_argument("arena: this graph was prepared with its own arena (external_arena is off)");
  }
  // Resolve every storage root, then every value through its root.
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ValueId v = g.inputs()[i];
    p.value_data[size_t(v)] = bindings.inputs[i].data;
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i];
    p.value_data[size_t(v)] = bindings.outputs[i].data;
  }
  const auto& values = g.values();
  for (size_t v = 0; v < values.size(); ++v) {
    if (values[v].role == ValueRole::weight)
      p.value_data[v] = const_cast<void*>(values[v].weight_data);
    else if (p.plan.offset[v] >= 0 && size_t(p.plan.storage[v]) == v)
      p.value_data[v] = arena + p.plan.offset[v];
  }
  for (size_t v = 0; v < values.size(); ++v) {
    const ValueId root = p.plan.storage[v];
    if (size_t(root) != v) p.value_data[v] = p.value_data[size_t(root)];
  }

  const auto& nodes = g.nodes();
  const int total = int(nodes.size());
  if (hooks && hooks->node_ms) hooks->node_ms->assign(nodes.size(), 0.0);
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    if (p.kernels[n]) {
      p.in_views.clear();
      p.out_views.clear();
      for (ValueId v : node.inputs)
        p.in_views.push_back(TensorView{values[size_t(v)].desc, p.value_data[size_t(v)]});
      for (ValueId v : node.outputs)
        p.out_views.push_back(TensorView{values[size_t(v)].desc, p.value_data[size_t(v)]});
      KernelArgs args{&node.attrs, p.in_views, p.out_views, pool, p.node_state[n].get()};
      const auto t0 = std::chrono::steady_clock::now();
      Status st = p.kernels[n](args);
      if (hooks && hooks->node_ms)
        (*hooks->node_ms)[n] =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!st.ok()) return st.with_context("node '" + node.name + "'");
    }
    if (hooks && hooks->progress && !hooks->progress(int(n) + 1, total))
      return cancelled("run cancelled after node " + std::to_string(n + 1) + " of " + std::to_string(total));
  }
  return {};
}

}  // namespace longrun::host
