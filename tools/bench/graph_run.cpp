#include "graph_run.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "longrun/planner.h"
#include "longrun/thread_pool.h"

namespace longrun::bench {

Result<std::unique_ptr<Backend>> make_backend(const Engine& engine) {
  BackendOptions options;
  options.threads = engine.threads;
  options.isa = engine.isa;
  options.affinity = engine.cpus;
  options.spin_us = engine.spin_us;
  options.auto_affinity = engine.auto_affinity;
  options.precision = engine.precision;
  return create_backend(engine.backend, options);
}

std::string pool_settings_text(const std::vector<int>& cpus, int spin_us, bool auto_affinity) {
  return (cpus.empty() ? "" : " pinned to CPUs " + cpu_list_text(cpus)) +
         (cpus.empty() && !auto_affinity ? ", no auto affinity" : "") +
         (spin_us == 0 ? "" : ", workers spin " + std::to_string(spin_us) + " us");
}

EngineLabel engine_label(const Backend& backend, const Engine& engine) {
  EngineLabel label;
  label.threads = engine.threads;
  const std::string d = backend.description();
  const size_t open = d.find('(');
  if (backend.name() == "cpu" && open != std::string::npos) {
    const size_t end = d.find_first_of(",)", open);
    if (end != std::string::npos) label.isa = d.substr(open + 1, end - open - 1);
  }
  // "N thread(s)" in the description is what the backend really uses (the reference
  // backend is always serial, whatever was asked).
  const size_t th = d.find(" thread");
  if (th != std::string::npos) {
    size_t begin = th;
    while (begin > 0 && d[begin - 1] >= '0' && d[begin - 1] <= '9') --begin;
    if (begin < th) label.threads = std::atoi(d.substr(begin, th - begin).c_str());
  }
  return label;
}

GraphRun::~GraphRun() {
  prepared_.reset();  // before the backend that made it
}

Result<std::unique_ptr<GraphRun>> GraphRun::create(const Graph& graph, std::span<const TensorView> inputs,
                                                   const Engine& engine, int64_t host_budget) {
  std::unique_ptr<GraphRun> r(new GraphRun());
  LR_ASSIGN_OR_RETURN(r->backend_, make_backend(engine));
  r->graph_ = std::make_unique<Graph>(graph);
  const Graph& g = *r->graph_;
  if (inputs.size() != g.inputs().size())
    return internal_error("bench case binds " + std::to_string(inputs.size()) + " inputs, graph has " +
                          std::to_string(g.inputs().size()));
  for (const Node& node : g.nodes()) {
    std::string why;
    if (!r->backend_->supports(g, node, &why))
      return unsupported("backend '" + std::string(r->backend_->name()) + "' does not support node '" +
                         node.name + "': " + why);
  }
  LR_ASSIGN_OR_RETURN(const Plan plan, plan_memory(g));
  PrepareOptions options;
  if (host_budget >= 0) {
    const int64_t arena = plan.report.arena_bytes, outputs = plan.report.output_bytes;
    if (arena > host_budget - outputs)
      return out_of_memory("the planned arena of " + std::to_string(arena) + " bytes and outputs of " +
                           std::to_string(outputs) + " bytes exceed the " + std::to_string(host_budget) +
                           " bytes of memory available");
    options.memory_budget_bytes = host_budget - outputs;
  }
  LR_ASSIGN_OR_RETURN(r->prepared_, r->backend_->prepare(g, plan, options));
  r->memory_ = r->prepared_->memory_report();
  r->inputs_.assign(inputs.begin(), inputs.end());
  try {
    for (ValueId id : g.outputs()) {
      const TensorDesc& d = g.value(id).desc;
      auto buf = std::make_shared<HostBuffer>(size_t(d.nbytes()));
      // Touch the pages now so that first-touch page faults are not timed.
      std::memset(buf->data(), 0, buf->size());
      r->outputs_.push_back(TensorView{d, buf->data()});
      r->output_buffers_.push_back(std::move(buf));
    }
  } catch (const std::bad_alloc&) {
    return out_of_memory("cannot allocate the bench case's output buffers");
  }
  return r;
}

Status GraphRun::run() {
  Bindings bindings{inputs_, outputs_};
  last_device_ms_ = -1;
  RunHooks hooks;
  hooks.device_ms = &last_device_ms_;
  LR_RETURN_IF_ERROR(backend_->execute(*prepared_, bindings, &hooks));
  return backend_->synchronize();
}

}  // namespace longrun::bench
