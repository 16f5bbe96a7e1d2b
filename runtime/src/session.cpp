#include "longrun/session.h"

#include <list>
#include <mutex>
#include <string>

#include "longrun/ops/schema.h"

namespace longrun {

namespace {

struct CachedPlan {
  std::vector<TensorDesc> key;
  Graph graph;
  Plan plan;
  std::unique_ptr<Prepared> prepared;
};

bool same_descs(std::span<const TensorDesc> a, std::span<const TensorDesc> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;
  return true;
}

// unsupported when the graph uses an op whose kernels this build left out (LONGRUN_OPS).
Status check_ops_in_build(const Graph& graph) {
  for (const Node& node : graph.nodes()) {
    if (op_in_build(node.kind)) continue;
    const std::string op(op_name(node.kind));
    return unsupported("node '" + node.name + "' uses op '" + op +
                       "', which this build of longrun leaves out (configured with -DLONGRUN_OPS=\"" +
                       std::string(ops_build_setting()) + "\"): rebuild with '" + op + "' in LONGRUN_OPS");
  }
  return {};
}

}  // namespace

struct Session::Impl {
  GraphFactory factory;
  std::vector<std::string> input_names;
  SessionOptions options;
  std::unique_ptr<Backend> backend;
  std::list<CachedPlan> cache;  // most recently used first
  std::mutex mutex;

  // out_of_memory when this shape's arena (unless the caller provides it) plus the backend's
  // workspaces and the weight copies its preparation made would exceed
  // options.memory_limit_bytes.
  Status check_memory_limit(const MemoryReport& r, std::span<const TensorDesc> descs) const {
    if (options.memory_limit_bytes <= 0) return {};
    const int64_t need =
        (options.external_arena ? 0 : r.arena_bytes) + r.workspace_bytes + r.weight_bytes_copied;
    if (need <= options.memory_limit_bytes) return {};
    return out_of_memory("inputs (" + shape_text(descs) + ") need " + std::to_string(need) +
                         " bytes (arena " + std::to_string(options.external_arena ? 0 : r.arena_bytes) +
                         ", workspaces " + std::to_string(r.workspace_bytes) + ", weight copies " +
                         std::to_string(r.weight_bytes_copied) + "), over the session's memory limit of " +
                         std::to_string(options.memory_limit_bytes) + " bytes");
  }

  // Returns the cached entry for these descs, building, planning and preparing on a miss.
  Result<CachedPlan*> lookup(std::span<const TensorDesc> descs) {
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (same_descs(it->key, descs)) {
        cache.splice(cache.begin(), cache, it);
        return &cache.front();
      }
    }
    LR_ASSIGN_OR_RETURN(Graph graph, factory(descs));
    LR_RETURN_IF_ERROR(graph.verify());
    for (size_t i = 0; i < input_names.size(); ++i) {
      const ValueId v = graph.find_input(input_names[i]);
      if (v == kNoValue) return invalid_argument("graph has no input named '" + input_names[i] + "'");
      if (!(graph.value(v).desc == descs[i]))
        return invalid_argument("input '" + input_names[i] + "': expected " +
                                graph.value(v).desc.to_string() + ", found " + descs[i].to_string());
    }
    if (graph.inputs().size() != input_names.size())
      return invalid_argument("graph has " + std::to_string(graph.inputs().size()) +
                              " inputs, session names " + std::to_string(input_names.size()));
    LR_RETURN_IF_ERROR(check_ops_in_build(graph));
    for (const Node& node : graph.nodes()) {
      std::string why;
      if (!backend->supports(graph, node, &why))
        return unsupported("backend '" + std::string(backend->name()) + "' cannot run node '" + node.name +
                           "' (" + std::string(op_name(node.kind)) + "): " + why);
    }
    CachedPlan entry{std::vector<TensorDesc>(descs.begin(), descs.end()), std::move(graph), {}, nullptr};
    if (cache.size() >= std::max<size_t>(1, options.plan_cache_capacity)) cache.pop_back();
    cache.push_front(std::move(entry));
    CachedPlan& e = cache.front();
    // The entry is only kept once prepared: a failure, or an exception (std::bad_alloc from
    // a kernel's prepare step), removes it, so no later lookup finds it half made.
    struct Unless {
      std::list<CachedPlan>* cache;
      bool kept = false;
      ~Unless() {
        if (!kept) cache->pop_front();
      }
    } drop{&cache};
    auto plan = plan_memory(e.graph, options.planner);
    if (!plan.ok()) return plan.status();
    e.plan = std::move(plan).value();
    // The limit is checked on the plan's arena first, then enforced by the backend as its
    // preparation reserves workspaces and weight copies (nothing past it is allocated), and
    // checked once more on the final report.
    if (Status st = check_memory_limit(e.plan.report, descs); !st.ok()) return st;
    PrepareOptions prepare_options;
    if (options.memory_limit_bytes > 0) prepare_options.memory_budget_bytes = options.memory_limit_bytes;
    auto prepared = backend->prepare(e.graph, e.plan, prepare_options);
    if (!prepared.ok()) {
      if (prepared.status().code() == StatusCode::out_of_memory && options.memory_limit_bytes > 0)
        return out_of_memory(
                   "inputs (" + shape_text(descs) + ") would go over the session's memory limit of " +
                   std::to_string(options.memory_limit_bytes) + " bytes: " + prepared.status().message())
            .with_context(std::string(backend->name()));
      return prepared.status().with_context(std::string(backend->name()));
    }
    e.prepared = std::move(prepared).value();
    if (Status st = check_memory_limit(e.prepared->memory_report(), descs); !st.ok()) return st;
    drop.kept = true;
    if (options.log) {
      const MemoryReport& r = e.prepared->memory_report();
      options.log(LogLevel::info, "planned a new input shape: arena " + std::to_string(r.arena_bytes) +
                                      " bytes, workspaces " + std::to_string(r.workspace_bytes) + " bytes (" +
                                      shape_text(descs) + ")");
    }
    return &e;
  }

  // "input_ids i64[1, 9], ..." for messages.
  std::string shape_text(std::span<const TensorDesc> descs) const {
    std::string shape;
    for (size_t i = 0; i < descs.size() && i < input_names.size(); ++i)
      shape += (shape.empty() ? "" : ", ") + input_names[i] + " " + descs[i].to_string();
    return shape;
  }

  Result<std::vector<NamedTensor>> run(std::span<const NamedTensorRef> inputs, RunHooks* hooks,
                                       std::span<std::byte> arena);
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::create(Graph graph, const SessionOptions& options) {
  LR_RETURN_IF_ERROR(graph.verify());
  LR_RETURN_IF_ERROR(check_ops_in_build(graph));  // a fixed graph fails here, not at the first run
  std::vector<std::string> names;
  for (ValueId v : graph.inputs()) names.push_back(graph.value(v).name);
  auto shared = std::make_shared<const Graph>(std::move(graph));
  GraphFactory factory = [shared](std::span<const TensorDesc> descs) -> Result<Graph> {
    for (size_t i = 0; i < descs.size(); ++i) {
      const Value& v = shared->value(shared->inputs()[i]);
      if (!v.desc.same_shape(descs[i]) || v.desc.dtype() != descs[i].dtype())
        return invalid_argument("input '" + v.name + "': this graph takes " + v.desc.to_string() +
                                ", found " + descs[i].to_string());
    }
    return Graph(*shared);
  };
  return create(std::move(factory), std::move(names), options);
}

Result<std::unique_ptr<Session>> Session::create(GraphFactory factory, std::vector<std::string> input_names,
                                                 const SessionOptions& options) {
  if (!factory) return invalid_argument("Session::create: empty graph factory");
  if (options.deterministic && options.threads == 0 && options.affinity.empty())
    return invalid_argument(
        "deterministic session: threads = 0 (all hardware threads) depends on the machine; "
        "give an explicit thread count or an affinity CPU list");
  BackendOptions bo;
  bo.threads = options.threads;
  bo.isa = options.isa;
  bo.precision = options.precision;
  bo.external_arena = options.external_arena;
  bo.affinity = options.affinity;
  bo.spin_us = options.spin_us;
  bo.auto_affinity = options.auto_affinity;
  bo.deterministic = options.deterministic;
  LR_ASSIGN_OR_RETURN(auto backend, create_backend(options.backend, bo));
  auto impl = std::make_unique<Impl>();
  impl->factory = std::move(factory);
  impl->input_names = std::move(input_names);
  impl->options = options;
  impl->backend = std::move(backend);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Result<std::vector<NamedTensor>> Session::run(std::span<const NamedTensorRef> inputs, RunHooks* hooks) {
  if (impl_->options.external_arena) {
    Status st = invalid_argument("this session was created with external_arena: pass the arena to run()");
    if (impl_->options.log) impl_->options.log(LogLevel::error, "run failed: " + st.to_string());
    return st;
  }
  return run(inputs, hooks, {});
}

Result<std::vector<NamedTensor>> Session::run(std::span<const NamedTensorRef> inputs, RunHooks* hooks,
                                              std::span<std::byte> arena) {
  auto result = impl_->run(inputs, hooks, arena);
  if (!result.ok() && impl_->options.log)
    impl_->options.log(LogLevel::error, "run failed: " + result.status().to_string());
  return result;
}

Result<std::vector<NamedTensor>> Session::Impl::run(std::span<const NamedTensorRef> inputs, RunHooks* hooks,
                                                    std::span<std::byte> arena) {
  Impl& s = *this;
  if (!arena.empty() && !s.options.external_arena)
    return invalid_argument(
        "an arena was passed to run() but the session was created without external_arena");
  // Order the caller's tensors as the session's input names.
  std::vector<TensorDesc> descs(s.input_names.size());
  std::vector<const TensorView*> ordered(s.input_names.size(), nullptr);
  for (const NamedTensorRef& in : inputs) {
    size_t i = 0;
    while (i < s.input_names.size() && s.input_names[i] != in.name) ++i;
    if (i == s.input_names.size()) {
      std::string known;
      for (const auto& n : s.input_names) known += (known.empty() ? "" : ", ") + n;
      return invalid_argument("unknown input '" + in.name + "' (inputs: " + known + ")");
    }
    if (ordered[i]) return invalid_argument("input '" + in.name + "' given twice");
    if (!in.view.desc.is_contiguous())
      return invalid_argument("input '" + in.name + "' must be contiguous, found " +
                              in.view.desc.to_string());
    if (in.view.data == nullptr && in.view.desc.numel() > 0)
      return invalid_argument("input '" + in.name + "' has a null data pointer");
    ordered[i] = &in.view;
    descs[i] = in.view.desc;
  }
  for (size_t i = 0; i < ordered.size(); ++i)
    if (!ordered[i]) return invalid_argument("missing input '" + s.input_names[i] + "'");

  std::lock_guard<std::mutex> lock(s.mutex);
  LR_ASSIGN_OR_RETURN(CachedPlan * entry, s.lookup(descs));
  const Graph& g = entry->graph;
  std::vector<TensorView> in_views(g.inputs().size());
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const std::string& name = g.value(g.inputs()[i]).name;
    for (size_t j = 0; j < s.input_names.size(); ++j)
      if (s.input_names[j] == name) in_views[i] = *ordered[j];
  }
  std::vector<NamedTensor> outputs;
  std::vector<TensorView> out_views;
  for (ValueId v : g.outputs()) {
    LR_ASSIGN_OR_RETURN(Tensor t, Tensor::zeros(g.value(v).desc));
    out_views.push_back(t.view());
    outputs.push_back(NamedTensor{g.value(v).name, std::move(t)});
  }
  Bindings b{in_views, out_views, arena};
  LR_RETURN_IF_ERROR(s.backend->execute(*entry->prepared, b, hooks));
  LR_RETURN_IF_ERROR(s.backend->synchronize());
  return outputs;
}

Result<MemoryReport> Session::memory_report(std::span<const TensorDesc> input_descs) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  LR_ASSIGN_OR_RETURN(CachedPlan * entry, impl_->lookup(input_descs));
  return entry->prepared->memory_report();
}

Result<const Graph*> Session::graph_for(std::span<const TensorDesc> input_descs) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  LR_ASSIGN_OR_RETURN(CachedPlan * entry, impl_->lookup(input_descs));
  return &entry->graph;
}

const Backend& Session::backend() const { return *impl_->backend; }

size_t Session::cached_plans() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->cache.size();
}

}  // namespace longrun
