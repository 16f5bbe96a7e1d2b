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

struct BF16State {
  // The bf16 route (taken when weight is set): the weight the packed copy was made from.
  const void* weight = nullptr;
  TensorDesc w_desc;
  std::shared_ptr<const bf16::PackedWeightBF16> packed;  // shared with other plans (gemm_weight_cache.h)
  // Otherwise: the f32 kernel's prepared state.
  std::shared_ptr<void> f32_state;
};

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

}  // namespace

Result<std::shared_ptr<void>> cpu_matmul_bf16_prepare_avx2(const Graph& graph, const Node& node,
                                                           ThreadPool* pool) {
  auto state = std::make_shared<BF16State>();
  std::vector<TensorDesc> in;
  for (ValueId v : node.inputs) in.push_back(graph.value(v).desc);
  const Value* w = node.inputs.size() >= 2 ? &graph.value(node.inputs[1]) : nullptr;
  const ops::LinearWeight layout = std::holds_alternative<MatmulAttrs>(node.attrs) &&
                                           node.outputs.size() == 1 && w != nullptr &&
                                           w->role == ValueRole::weight && w->weight_data != nullptr
                                       ? ops::linear_weight_layout(std::get<MatmulAttrs>(node.attrs), in,
                                                                   graph.value(node.outputs[0]).desc)
                                       : ops::LinearWeight::none;
  if (layout != ops::LinearWeight::none) {
    const bool nk = layout == ops::LinearWeight::nk;
    const int64_t n = w->desc.dim(nk ? 0 : 1), k = w->desc.dim(nk ? 1 : 0);
    bool created = false;
    LR_ASSIGN_OR_RETURN(state->packed,
                        gemm::shared_weight<bf16::PackedWeightBF16>(
                            linear::weight_key(*w, layout, "bf16x16"),
                            [&] { return host::reserve_weight_copy_bytes(bf16::packed_weight_bytes(n, k)); },
                            [&] { return round_and_pack(*w, layout, n, k); }, &created));
    // Runs read the packed copy alone: the original's file pages go, as on the f32 path.
    if (created) gemm::release_packed_weight_pages(graph, node.inputs[1]);
    state->weight = w->weight_data;
    state->w_desc = w->desc;
    return std::shared_ptr<void>(state);
  }
  LR_ASSIGN_OR_RETURN(state->f32_state, cpu_matmul_prepare_avx2(graph, node, pool));
  return std::shared_ptr<void>(state);
}

Status cpu_matmul_bf16_avx2(const KernelArgs& args) {
  const auto* state = static_cast<const BF16State*>(args.prepared);
  if (state == nullptr || !linear::same_weight(args, state->weight, state->w_desc)) {
    KernelArgs f32 = args;
    f32.prepared = state != nullptr ? state->f32_state.get() : nullptr;
    return cpu_matmul_f32_avx2(f32);
  }
  const linear::Call c = linear::read_call(args, state->packed->n);
  return bf16::gemm_bf16_avx2(c.x, c.rows, c.k, *state->packed, c.y, state->packed->n, &c.epilogue, c.pool);
}

}  // namespace longrun::cpu
