// The cpu backend: run-time ISA dispatch over a static kernel table (kernels.inc) and a
// oneTBB thread pool.
#include <array>
#include <cstdlib>
#include <iterator>

#include "backend_factories.h"
#include "cpu/cpu_isa.h"
#include "cpu/cpu_kernels.h"
#include "host/host_executor.h"
#include "longrun/op_subset.h"  // generated from LONGRUN_OPS
#include "longrun/thread_pool.h"

namespace longrun {
namespace {

using host::HostKernel;

struct CpuKernelRow {
  HostKernel by_isa[3];
};

using namespace cpu;  // kernel symbols in kernels.inc

// kernels.inc must list the ops in op_list.inc order: checked at compile time.
constexpr OpKind kCpuTableOrder[] = {
#define LR_CPU_KERNEL(name, scalar, avx2, avx512) OpKind::name,
#include "cpu/kernels.inc"
};
static_assert(std::size(kCpuTableOrder) == size_t(kNumOps), "kernels.inc must have one row per op");
constexpr bool table_in_op_order() {
  for (size_t i = 0; i < std::size(kCpuTableOrder); ++i)
    if (size_t(kCpuTableOrder[i]) != i) return false;
  return true;
}
static_assert(table_in_op_order(), "kernels.inc rows must follow op_list.inc order");

const std::array<CpuKernelRow, kNumOps>& cpu_kernel_table() {
  static const std::array<CpuKernelRow, kNumOps> table = {{
// (A kernel of an op left out of the build, LONGRUN_OPS, is nullptr: its files are not compiled.)
#define LR_CPU_KERNEL(name, scalar, avx2, avx512) \
  {{LR_IF_OP_ENABLED(name, scalar), LR_IF_OP_ENABLED(name, avx2), LR_IF_OP_ENABLED(name, avx512)}},
#include "cpu/kernels.inc"
  }};
  return table;
}

struct CpuState {
  cpu::Isa isa;
  Precision precision = Precision::f32;
};

HostKernel pick_cpu(const Node& node, const void* state, std::string* why) {
  const auto* cpu_state = static_cast<const CpuState*>(state);
#if LONGRUN_OP_ENABLED_matmul
  // int8: linear layers on the int8 GEMM (the kernel runs every other matmul in f32).
  if (node.kind == OpKind::matmul && cpu_state->precision == Precision::int8)
    return cpu_matmul_s8_avx2_with_prepare;
  // bf16: linear layers on the bf16 GEMM (the kernel runs every other matmul in f32).
  if (node.kind == OpKind::matmul && cpu_state->precision == Precision::bf16)
    return cpu_matmul_bf16_avx2_with_prepare;
#endif
#if LONGRUN_OP_ENABLED_sparse_attention
  // bf16: f32 K and V rounded to bf16, gathered at half the bytes (docs/cpu-kernels.md#bf16-k-and-v).
  // Dense attention and axial_attention stay f32: AVX2 has no bf16 dot product to gain from it.
  if (node.kind == OpKind::sparse_attention && cpu_state->precision == Precision::bf16)
    return cpu_state->isa >= cpu::Isa::avx512 ? cpu_sparse_attention_bf16_avx512_with_prepare
                                              : cpu_sparse_attention_bf16_avx2_with_prepare;
#endif
  const auto& row = cpu_kernel_table()[size_t(node.kind)];
  for (int level = int(cpu_state->isa); level >= 0; --level)
    if (row.by_isa[level]) return row.by_isa[level];
  *why = "no cpu kernel at any ISA level";
  return {};
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(cpu::Isa isa, Precision precision, std::unique_ptr<ThreadPool> pool, bool external_arena)
      : state_{isa, precision}, pool_(std::move(pool)), external_arena_(external_arena) {}
  std::string_view name() const override { return "cpu"; }
  bool supports(const Graph&, const Node& node, std::string* why) const override {
    return bool(pick_cpu(node, &state_, why));
  }
  Result<std::unique_ptr<Prepared>> prepare(const Graph& graph, const Plan& plan,
                                            const PrepareOptions& options) override {
    return host::prepare(graph, plan, &pick_cpu, &state_, pool_.get(), external_arena_,
                         options.memory_budget_bytes);
  }
  Status execute(Prepared& prepared, const Bindings& bindings, RunHooks* hooks) override {
    Status status;  // one pin of the caller for the whole run (ThreadPool::run_inside)
    pool_->run_inside([&] { status = host::execute(prepared, bindings, hooks, pool_.get()); });
    return status;
  }
  Status synchronize() override { return {}; }
  std::string description() const override {
    return "cpu (" + std::string(cpu::isa_name(state_.isa)) +
           (state_.precision == Precision::f32 ? "" : ", " + std::string(precision_name(state_.precision))) +
           ", " + std::to_string(pool_->num_threads()) + " thread" + (pool_->num_threads() == 1 ? "" : "s") +
           (pool_->affinity().empty() ? "" : ", CPUs " + cpu_list_text(pool_->affinity())) +
           (pool_->follow_cpus().empty()
                ? ""
                : ", following the caller on CPUs " + cpu_list_text(pool_->follow_cpus())) +
           (pool_->spin_us() == 0 ? "" : ", workers spin " + std::to_string(pool_->spin_us()) + " us") + ")";
  }

 private:
  CpuState state_;
  std::unique_ptr<ThreadPool> pool_;
  bool external_arena_ = false;
};

}  // namespace

Result<std::unique_ptr<Backend>> create_cpu_backend(const BackendOptions& options) {
  const cpu::Isa best = cpu::detect_isa();
  cpu::Isa isa = best;
  std::string requested = options.isa;
  if (requested.empty() && options.deterministic) requested = best >= cpu::Isa::avx2 ? "avx2" : "scalar";
  if (requested.empty())
    if (const char* env = std::getenv("LONGRUN_CPU_ISA")) requested = env;
  if (!requested.empty()) {
    auto parsed = cpu::parse_isa(requested);
    if (!parsed)
      return invalid_argument("cpu backend: unknown ISA '" + requested + "' (scalar, avx2, avx512)");
    if (int(*parsed) > int(best))
      return unsupported("cpu backend: ISA '" + requested + "' is not supported by this machine (best: " +
                         std::string(cpu::isa_name(best)) + ")");
    isa = *parsed;
  }
  if (options.precision != Precision::f32 && isa < cpu::Isa::avx2)
    return unsupported("cpu backend: precision " + std::string(precision_name(options.precision)) +
                       " needs the avx2 ISA level or above for matmul's " +
                       std::string(precision_name(options.precision)) + " GEMM; the session runs at " +
                       std::string(cpu::isa_name(isa)));
  ThreadPoolOptions pool_options;
  pool_options.threads = options.threads;
  pool_options.cpus = options.affinity;
  pool_options.spin_us = options.spin_us;
  pool_options.auto_affinity = options.auto_affinity;
  LR_ASSIGN_OR_RETURN(auto pool, make_thread_pool(pool_options));
  return std::unique_ptr<Backend>(
      new CpuBackend(isa, options.precision, std::move(pool), options.external_arena));
}

}  // namespace longrun
