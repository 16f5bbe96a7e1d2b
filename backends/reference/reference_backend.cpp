// The reference backend: the scalar oracle kernels of ops/, single-threaded. It exists to
// be compared against. At int8 precision its matmuls run matmul_int8.cpp (the format's scalar
// definition for linear layers, f32 otherwise); at f32 a matmul with a quantized weight reads
// its dequantized values (matmul_dequantized.cpp). At bf16 precision its linear layers and
// sparse_attention's K and V are rounded to bf16 (precision_bf16.cpp).
#include <string>

#include "backend_factories.h"
#include "host/host_executor.h"
#include "longrun/op_subset.h"  // generated from LONGRUN_OPS
#include "reference/matmul_dequantized.h"
#include "reference/matmul_int8.h"
#include "reference/precision_bf16.h"

namespace longrun {
namespace {

struct ReferenceState {
  Precision precision = Precision::f32;
};

host::HostKernel pick_reference(const Node& node, const void* state, std::string* why) {
  const auto* s = static_cast<const ReferenceState*>(state);
  if (node.kind == OpKind::matmul && s != nullptr && s->precision == Precision::bf16)
    if (host::HostKernel k = reference_matmul_bf16_kernel()) return k;
  if (node.kind == OpKind::sparse_attention && s != nullptr && s->precision == Precision::bf16)
    if (host::HostKernel k = reference_sparse_attention_bf16_kernel()) return k;
#if LONGRUN_OP_ENABLED_matmul
  if (node.kind == OpKind::matmul && s != nullptr && s->precision == Precision::int8)
    return reference::matmul_int8_with_prepare;
  // f32: a quantized B is read as its f32 values, made at prepare.
  if (node.kind == OpKind::matmul) return reference::matmul_dequantized_with_prepare;
#endif
  KernelFn fn = op_schema(node.kind).reference;
  if (!fn) *why = "the op has no reference kernel";
  return fn;
}

class ReferenceBackend final : public Backend {
 public:
  ReferenceBackend(Precision precision, bool external_arena)
      : state_{precision}, external_arena_(external_arena) {}
  std::string_view name() const override { return "reference"; }
  bool supports(const Graph&, const Node& node, std::string* why) const override {
    return bool(pick_reference(node, &state_, why));
  }
  Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan,
                                            const PrepareOptions& options) override {
    return host::prepare(graph, plan, &pick_reference, &state_, nullptr, external_arena_,
                         options.memory_budget_bytes);
  }
  Status execute(Prepared& prepared, const Bindings& bindings, RunHooks* hooks) override {
    return host::execute(prepared, bindings, hooks, nullptr);
  }
  Status synchronize() override { return {}; }
  std::string description() const override {
    return std::string("reference (scalar oracle kernels, 1 thread") +
           (state_.precision == Precision::f32 ? "" : ", " + std::string(precision_name(state_.precision))) +
           ")";
  }

 private:
  ReferenceState state_;
  bool external_arena_ = false;
};

}  // namespace

Result<std::unique_ptr<Backend>> create_reference_backend(const BackendOptions& options) {
  return std::unique_ptr<Backend>(new ReferenceBackend(options.precision, options.external_arena));
}

}  // namespace longrun
