// The reference backend: the scalar oracle kernels of ops/, single-threaded. It exists to
// be compared against.
#include <string>

#include "backend_factories.h"
#include "host/host_executor.h"

namespace longrun {
namespace {

host::HostKernel pick_reference(const Node& node, const void*, std::string* why) {
  KernelFn fn = op_schema(node.kind).reference;
  if (!fn) *why = "the op has no reference kernel";
  return fn;
}

class ReferenceBackend final : public Backend {
 public:
  explicit ReferenceBackend(bool external_arena) : external_arena_(external_arena) {}
  std::string_view name() const override { return "reference"; }
  bool supports(const Graph&, const Node& node, std::string* why) const override {
    return bool(pick_reference(node, nullptr, why));
  }
  Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan,
                                            const PrepareOptions& options) override {
    return host::prepare(graph, plan, &pick_reference, nullptr, nullptr, external_arena_,
                         options.memory_budget_bytes);
  }
  Status execute(Prepared& prepared, const Bindings& bindings, RunHooks* hooks) override {
    return host::execute(prepared, bindings, hooks, nullptr);
  }
  Status synchronize() override { return {}; }
  std::string description() const override { return "reference (scalar oracle kernels, 1 thread)"; }

 private:
  bool external_arena_ = false;
};

}  // namespace

Result<std::unique_ptr<Backend>> create_reference_backend(const BackendOptions& options) {
  if (options.precision != Precision::f32)
    return unsupported("reference backend: precision " + std::string(precision_name(options.precision)) +
                       " is not implemented (f32 only)");
  return std::unique_ptr<Backend>(new ReferenceBackend(options.external_arena));
}

}  // namespace longrun
