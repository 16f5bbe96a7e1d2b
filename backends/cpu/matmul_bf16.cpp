// The cpu backend's matmul at bf16 precision (docs/cpu-kernels.md#bf16-gemm): a linear layer,
// y = act(alpha · x · op(W) + bias + beta · C) with a constant weight W ([N, K] or [K, N]),
// runs on the bf16 GEMM (gemm_bf16.h: W rounded to bf16 and packed once per process, shared
// by every plan and session through gemm_weight_cache.h; x rounded on every run); every other
// matmul (attention's Q·Kᵀ and P·V, a B that is an activation, a batched or transposed
// weight) runs the f32 kernel unchanged.
#include "backends/cpu/matmul_bf16.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_bf16.h"
#include "backends/cpu/gemm_weight_cache.h"
#include "backends/cpu/matmul_linear.h"
#include "longrun/ops/reduced_precision.h"

namespace longrun::cpu {
namespace {

using BF16State = linear::Prepared<bf16::PackedWeightBF16>;

Result<std::shared_ptr<const bf16::PackedWeightBF16>> round_and_pack(const Value& w, ops::LinearWeight layout,
                                                                     int64_t n, int64_t k) {
  // A quantized weight: its f32 values q · scale, rounded like any f32 weight.
  const bool deq = w.desc.dtype() == DType::i8;
  std::vector<float> dequantized;
  if (deq) {
    LR_ASSIGN_OR_RETURN(dequantized, ops::dequantized_copy(w));
  }
  LR_ASSIGN_OR_RETURN(ops::bf16::RoundedWeight rounded,
                      ops::bf16::round_weight(deq ? dequantized.data() : w.weight_data,
                                              deq ? DType::f32 : w.desc.dtype(), layout, n, k));
  LR_ASSIGN_OR_RETURN(bf16::PackedWeightBF16 packed, bf16::pack_weight_bf16x16(rounded));
  return std::make_shared<const bf16::PackedWeightBF16>(std::move(packed));
}

// What round_and_pack holds at once besides the packed copy: the rounded n·k bf16 values and,
// for a quantized weight, its n·k f32 values.
Result<int64_t> round_and_pack_transient_bytes(const Value& w, ops::LinearWeight, int64_t n, int64_t k) {
  const int64_t each = int64_t(sizeof(uint16_t)) + (w.desc.dtype() == DType::i8 ? int64_t(sizeof(float)) : 0);
  return linear::checked_bytes(n, k, each, 0, "bf16 weight '" + w.name + "'");
}

}  // namespace

Result<std::shared_ptr<void>> cpu_matmul_bf16_prepare_avx2(const Graph& graph, const Node& node,
                                                           ThreadPool* pool) {
  auto state = std::make_shared<BF16State>();
  LR_RETURN_IF_ERROR(linear::prepare_linear(graph, node, pool, "bf16x16", bf16::packed_weight_bytes,
                                            round_and_pack, round_and_pack_transient_bytes, *state));
  return std::shared_ptr<void>(state);
}

Status cpu_matmul_bf16_avx2(const KernelArgs& args) {
  const auto* state = static_cast<const BF16State*>(args.prepared);
  if (!linear::on_route(args, state)) return linear::run_f32(args, state);
  const linear::Call c = linear::read_call(args, state->packed->n);
  return bf16::gemm_bf16_avx2(c.x, c.rows, c.k, *state->packed, c.y, state->packed->n, &c.epilogue, c.pool);
}

}  // namespace longrun::cpu
