// The cuda backend: device memory for one prepared graph (the planner's arena as one
// allocation, a buffer per graph input and output, weights uploaded once and shared by every
// plan of the backend) and its execution on the backend's stream. execute() takes host
// bindings like every backend: inputs are copied to the device, the nodes run in order, the
// outputs are copied back, and the call returns once the stream is done.
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_executor.h"
#include "cuda/cuda_kernel.h"
#include "host/host_executor.h"
#include "longrun/ops/schema.h"

namespace longrun::cuda {
namespace {

std::string node_where(const Node& node) {
  return "node '" + node.name + "' (" + std::string(op_name(node.kind)) + ")";
}

bool node_supported(const Graph& graph, const Node& node, std::string* why) {
  const Kernel& k = kernel_for(node.kind);
  if (!k.run) {
    *why = "the cuda backend has no kernel for " + std::string(op_name(node.kind)) + " yet";
    return false;
  }
  return k.supports == nullptr || k.supports(graph, node, why);
}

struct NodeRun {
  KernelFn run = nullptr;  // null: a view, nothing runs
  std::vector<TensorView> inputs, outputs;
  std::shared_ptr<void> state;
};

class CudaPrepared final : public Prepared {
 public:
  const MemoryReport& memory_report() const override { return report; }

  const Graph* graph = nullptr;
  MemoryReport report;
  std::shared_ptr<void> arena;
  std::vector<std::shared_ptr<void>> buffers;  // graph inputs/outputs and the weights used
  std::vector<void*> input_data, output_data;  // device buffers, in Graph::inputs()/outputs() order
  std::vector<NodeRun> nodes;
};

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }

  Status init(int device) { return ctx_.init(device); }

  bool supports(const Graph& graph, const Node& node, std::string* why) const override {
    return node_supported(graph, node, why);
  }

  Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan,
                                            const PrepareOptions& options) override {
    std::lock_guard<std::mutex> lock(mu_);
    LR_CUDA(cudaSetDevice(ctx_.device));
    auto p = std::make_unique<CudaPrepared>();
    p->graph = &graph;
    p->report = plan.report;
    Budget budget{options.memory_budget_bytes};
    const auto& values = graph.values();
    std::vector<void*> data(values.size(), nullptr);
    // Copies no plan holds any more leave the cache before this plan's weights are looked up.
    for (auto it = weights_.begin(); it != weights_.end();)
      it = it->second.expired() ? weights_.erase(it) : ++it;

    LR_RETURN_IF_ERROR(budget.take(plan.report.arena_bytes, "the arena"));
    LR_ASSIGN_OR_RETURN(p->arena, device_alloc(plan.report.arena_bytes, "arena"));
    if (p->arena) LR_CUDA(cudaMemsetAsync(p->arena.get(), 0, size_t(plan.report.arena_bytes), ctx_.stream));
    auto* arena = static_cast<std::byte*>(p->arena.get());

    for (size_t v = 0; v < values.size(); ++v) {
      const Value& value = values[v];
      if (size_t(plan.storage[v]) != v) continue;  // a view: resolved through its root below
      const int64_t bytes = value.desc.nbytes();
      // A quantized weight is only a matmul's B, which reads its f32 copy (matmul_prepare
      // dequantizes on the host and uploads that): the i8 bytes never go to the device.
      if (value.role == ValueRole::weight && value.desc.dtype() == DType::i8) continue;
      if (value.role == ValueRole::weight) {
        LR_ASSIGN_OR_RETURN(std::shared_ptr<void> w, upload_weight(value, &budget, &p->report));
        data[v] = w.get();
        p->buffers.push_back(std::move(w));
      } else if (plan.offset[v] >= 0) {
        data[v] = arena + plan.offset[v];
      } else if (value.role == ValueRole::input || value.is_output) {
        LR_RETURN_IF_ERROR(budget.take(bytes, "a graph input/output buffer"));
        LR_ASSIGN_OR_RETURN(std::shared_ptr<void> b, device_alloc(bytes, "value '" + value.name + "'"));
        p->report.workspace_bytes += bytes;
        data[v] = b.get();
        p->buffers.push_back(std::move(b));
      }
    }
    for (size_t v = 0; v < values.size(); ++v)
      if (size_t(plan.storage[v]) != v) data[v] = data[size_t(plan.storage[v])];
    for (ValueId v : graph.inputs()) p->input_data.push_back(data[size_t(v)]);
    for (ValueId v : graph.outputs()) p->output_data.push_back(data[size_t(v)]);

    const auto& nodes = graph.nodes();
    p->nodes.resize(nodes.size());
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (plan.skip_node[n]) continue;
      const Node& node = nodes[n];
      std::string why;
      if (!node_supported(graph, node, &why)) return unsupported(node_where(node) + ": no kernel: " + why);
      NodeRun& r = p->nodes[n];
      const Kernel& k = kernel_for(node.kind);
      r.run = k.run;
      for (ValueId v : node.inputs) r.inputs.push_back(TensorView{values[size_t(v)].desc, data[size_t(v)]});
      for (ValueId v : node.outputs) r.outputs.push_back(TensorView{values[size_t(v)].desc, data[size_t(v)]});
      if (k.prepare) {
        int64_t device_bytes = 0;
        auto state = k.prepare(graph, node, ctx_, &device_bytes);
        if (!state.ok()) return state.status().with_context(node_where(node));
        r.state = std::move(state).value();
        p->report.workspace_bytes += device_bytes;
        LR_RETURN_IF_ERROR(
            budget.take(device_bytes, "a kernel's prepared state").with_context(node_where(node)));
      }
    }
    LR_CUDA(cudaStreamSynchronize(ctx_.stream));
    return std::unique_ptr<Prepared>(std::move(p));
  }

  Status execute(Prepared& prepared, const Bindings& bindings, RunHooks* hooks) override {
    std::lock_guard<std::mutex> lock(mu_);
    LR_CUDA(cudaSetDevice(ctx_.device));
    auto& p = static_cast<CudaPrepared&>(prepared);
    LR_RETURN_IF_ERROR(host::check_bindings(*p.graph, bindings));
    if (!bindings.arena.empty())
      return invalid_argument("arena: the cuda backend keeps its arena in device memory (no caller arena)");

    Status st = run_nodes(p, bindings, hooks);
    // Whatever happened, nothing may still be running on buffers the caller gets back.
    const Status synced = cuda_status(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
    if (!st.ok()) return st;
    return synced;
  }

  Status synchronize() override {
    std::lock_guard<std::mutex> lock(mu_);
    return cuda_status(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
  }

  std::string description() const override {
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB", double(ctx_.props.totalGlobalMem) / double(int64_t(1) << 30));
    return "cuda (device " + std::to_string(ctx_.device) + ": " + ctx_.props.name + ", sm_" +
           std::to_string(ctx_.props.major) + std::to_string(ctx_.props.minor) + ", " + mem + ")";
  }

 private:
  // The preparation's device-memory budget (PrepareOptions::memory_budget_bytes; < 0: none).
  struct Budget {
    int64_t limit = -1;
    int64_t used = 0;
    Status take(int64_t bytes, const char* what) {
      if (limit >= 0 && used + bytes > limit)
        return out_of_memory(std::string(what) + " of " + std::to_string(bytes) +
                             " bytes would take device memory to " + std::to_string(used + bytes) +
                             " bytes, over the memory budget of " + std::to_string(limit) + " bytes");
      used += bytes;
      return {};
    }
  };

  // One device copy per weight (host bytes + size), shared by every plan that uses it while
  // any of them lives.
  Result<std::shared_ptr<void>> upload_weight(const Value& value, Budget* budget, MemoryReport* report) {
    const int64_t bytes = value.desc.nbytes();
    const auto key = std::make_pair(value.weight_data, bytes);
    if (auto it = weights_.find(key); it != weights_.end())
      if (auto shared = it->second.lock()) return shared;
    LR_RETURN_IF_ERROR(budget->take(bytes, "a weight's device copy"));
    LR_ASSIGN_OR_RETURN(std::shared_ptr<void> w, device_alloc(bytes, "weight '" + value.name + "'"));
    if (bytes > 0)
      LR_RETURN_IF_ERROR(
          cuda_status(cudaMemcpy(w.get(), value.weight_data, size_t(bytes), cudaMemcpyHostToDevice),
                      "cudaMemcpy(weight '" + value.name + "' to the device)"));
    report->weight_bytes_copied += bytes;
    weights_[key] = w;
    return w;
  }

  Status run_nodes(CudaPrepared& p, const Bindings& bindings, RunHooks* hooks) {
    const Graph& g = *p.graph;
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const int64_t bytes = g.value(g.inputs()[i]).desc.nbytes();
      if (bytes > 0)
        LR_CUDA(cudaMemcpyAsync(p.input_data[i], bindings.inputs[i].data, size_t(bytes),
                                cudaMemcpyHostToDevice, ctx_.stream));
    }
    const auto& nodes = g.nodes();
    const int total = int(nodes.size());
    const bool timing = hooks && hooks->node_ms;
    const bool device_timing = hooks && hooks->device_ms;
    if (device_timing) LR_CUDA(cudaEventRecord(ctx_.nodes_start, ctx_.stream));
    if (timing) hooks->node_ms->assign(nodes.size(), 0.0);
    for (size_t n = 0; n < nodes.size(); ++n) {
      NodeRun& r = p.nodes[n];
      if (r.run) {
        KernelArgs args{&nodes[n].attrs, r.inputs, r.outputs, &ctx_, r.state.get()};
        const auto t0 = std::chrono::steady_clock::now();
        const Status st = r.run(args);
        if (!st.ok()) return st.with_context("node '" + nodes[n].name + "'");
        if (timing) {
          // Per-node times need the node to have finished (profiling runs only).
          LR_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize")
                                 .with_context("node '" + nodes[n].name + "'"));
          (*hooks->node_ms)[n] =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        }
      }
      if (hooks && hooks->progress && !hooks->progress(int(n) + 1, total))
        return cancelled("run cancelled after node " + std::to_string(n + 1) + " of " +
                         std::to_string(total));
    }
    if (device_timing) {
      LR_CUDA(cudaEventRecord(ctx_.nodes_end, ctx_.stream));
      LR_CUDA(cudaEventSynchronize(ctx_.nodes_end));
      float ms = 0;
      LR_CUDA(cudaEventElapsedTime(&ms, ctx_.nodes_start, ctx_.nodes_end));
      *hooks->device_ms = ms;
    }
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const int64_t bytes = g.value(g.outputs()[i]).desc.nbytes();
      if (bytes > 0)
        LR_CUDA(cudaMemcpyAsync(bindings.outputs[i].data, p.output_data[i], size_t(bytes),
                                cudaMemcpyDeviceToHost, ctx_.stream));
    }
    return {};
  }

  std::mutex mu_;
  Context ctx_;
  std::map<std::pair<const void*, int64_t>, std::weak_ptr<void>> weights_;
};

}  // namespace

Result<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions& options) {
  auto b = std::make_unique<CudaBackend>();
  LR_RETURN_IF_ERROR(
      b->init(options.device).with_context("cuda backend, device " + std::to_string(options.device)));
  return std::unique_ptr<Backend>(std::move(b));
}

}  // namespace longrun::cuda
