#include "host/host_executor.h"

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

// The report of the preparation running on this thread (null outside host::prepare).
thread_local MemoryReport* counting_report = nullptr;

struct CountInto {
  explicit CountInto(MemoryReport* r) { counting_report = r; }
  ~CountInto() { counting_report = nullptr; }
  CountInto(const CountInto&) = delete;
  CountInto& operator=(const CountInto&) = delete;
};

}  // namespace

void note_workspace_bytes(int64_t bytes) {
  if (counting_report != nullptr) counting_report->workspace_bytes += bytes;
}
void note_weight_copy_bytes(int64_t bytes) {
  if (counting_report != nullptr) counting_report->weight_bytes_copied += bytes;
}

Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan, KernelPicker pick,
                                          const void* backend_state, ThreadPool* pool, bool external_arena) {
  auto p = std::make_unique<HostPrepared>();
  p->external_arena = external_arena;
  p->graph = &graph;
  p->plan = plan;
  p->report = plan.report;
  const auto& nodes = graph.nodes();
  p->kernels.resize(nodes.size(), nullptr);
  p->node_state.resize(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (plan.skip_node[n]) continue;
    std::string why;
    const HostKernel k = pick(nodes[n], backend_state, &why);
    const std::string where = "node '" + nodes[n].name + "' (" + std::string(op_name(nodes[n].kind)) + ")";
    if (!k) return unsupported(where + ": no kernel: " + why);
    p->kernels[n] = k.run;
    if (k.prepare) {
      CountInto counting(&p->report);
      auto state = k.prepare(graph, nodes[n], pool);
      if (!state.ok()) return state.status().with_context(where);
      p->node_state[n] = std::move(state).value();
    }
  }
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
  if (bindings.inputs.size() != g.inputs().size() || bindings.outputs.size() != g.outputs().size())
    return invalid_argument("bindings: expected " + std::to_string(g.inputs().size()) + " inputs and " +
                            std::to_string(g.outputs().size()) + " outputs, found " +
                            std::to_string(bindings.inputs.size()) + " and " +
                            std::to_string(bindings.outputs.size()));
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
    LR_RETURN_IF_ERROR(check_binding(g.value(v), bindings.inputs[i], "input"));
    p.value_data[size_t(v)] = bindings.inputs[i].data;
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId v = g.outputs()[i];
    LR_RETURN_IF_ERROR(check_binding(g.value(v), bindings.outputs[i], "output"));
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
      KernelArgs args{&node.attrs, p.in_views, p.out_views, pool, {}, p.node_state[n].get()};
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
