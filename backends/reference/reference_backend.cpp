// The reference backend: the scalar oracle kernels of ops/, single-threaded. It exists to
// be compared against.
#include <string>

#include "backend_factories.h"
#include "host/host_executor.h"
#include "reference/precision_bf16.h"

namespace longrun {
namespace {

host::HostKernel pick_reference(const Node& node, const void* precision, std::string* why) {
  if (node.kind == OpKind::matmul && precision != nullptr &&
      *static_cast<const Precision*>(precision) == Precision::bf16)
    if (host::HostKernel k = reference_matmul_bf16_kernel()) return k;
  KernelFn fn = op_schema(node.kind).reference;
  if (!fn) *why = "the op has no reference kernel";
  return fn;
}

class ReferenceBackend final : public Backend {
 public:
  ReferenceBackend(bool external_arena, Precision precision)
      : external_arena_(external_arena), precision_(precision) {}
  std::string_view name() const override { return "reference"; }
  bool supports(const Graph&, const Node& node, std::string* why) const override {
    return bool(pick_reference(node, nullptr, why));
  }
  Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan,
                                            const PrepareOptions& options) override {
    return host::prepare(graph, plan, &pick_reference, &precision_, nullptr, external_arena_,
                         options.memory_budget_bytes);
  }
  Status execute(Prepared& prepared, const Bindings& bindings, RunHooks* hooks) override {
    return host::execute(prepared, bindings, hooks, nullptr);
  }
  Status synchronize() override { return {}; }
  std::string description() const override {
    return "reference (scalar oracle kernels" +
           (precision_ == Precision::f32 ? "" : ", " + std::string(precision_name(precision_))) +
           ", 1 thread)";
  }

 private:
  bool external_arena_ = false;
  Precision precision_ = Precision::f32;
};

}  // namespace

Result<std::unique_ptr<Backend>> create_reference_backend(const BackendOptions& options) {
  if (options.precision == Precision::int8)
    return unsupported("reference backend: precision int8 is not implemented (f32, bf16)");
  return std::unique_ptr<Backend>(new ReferenceBackend(options.external_arena, options.precision));
}

}  // namespace longrun
