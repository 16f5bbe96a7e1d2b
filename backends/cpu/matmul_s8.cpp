// The cpu backend's matmul at int8 precision (docs/cpu-kernels.md#int8-gemm): a linear layer
// (ops::linear_weight_layout), y = act(alpha · x · op(W) + bias + beta · C) with a constant
// weight W[N, K] used transposed or W[K, N] used as is, runs on the int8 GEMM (gemm_s8.h: W
// quantized per output channel once per process, x per row on every run); every other matmul
// (attention's Q·Kᵀ and P·V, a B that is an activation, a batched weight) runs the f32 kernel
// unchanged.
#include "backends/cpu/matmul_s8.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_s8.h"
#include "backends/cpu/gemm_weight_cache.h"
#include "backends/cpu/matmul_linear.h"
#include "longrun/dtype.h"
#include "longrun/ops/reduced_precision.h"

namespace longrun::cpu {
namespace {

struct S8State {
  // The int8 route (taken when weight is set): the weight the packed copy was made from.
  const void* weight = nullptr;
  TensorDesc w_desc;
  std::shared_ptr<const s8::PackedWeightS8> packed;  // shared with other plans (gemm_weight_cache.h)
  // The quantized activations' run-time scratch (shared with the graph's other nodes).
  std::shared_ptr<const host::SharedScratch> scratch;
  // Otherwise: the f32 kernel's prepared state.
  std::shared_ptr<void> f32_state;
};

Result<std::shared_ptr<const s8::PackedWeightS8>> quantize_and_pack(const Value& w, ops::LinearWeight layout,
                                                                    int64_t n, int64_t k, ThreadPool* pool) {
  // A weight quantized in the model file: its stored q and scales, packed as they are.
  if (w.desc.dtype() == DType::i8) {
    LR_ASSIGN_OR_RETURN(const ops::s8::QuantizedWeight qw, ops::s8::stored_weight(w, layout, n, k));
    LR_ASSIGN_OR_RETURN(s8::PackedWeightS8 packed, s8::pack_weight_s8x16(qw));
    return std::make_shared<const s8::PackedWeightS8>(std::move(packed));
  }
  LR_ASSIGN_OR_RETURN(s8::PackedWeightS8 packed,
                      s8::quantize_pack_weight_avx2(w.weight_data, w.desc.dtype(), layout, n, k, pool));
  return std::make_shared<const s8::PackedWeightS8>(std::move(packed));
}

}  // namespace

Result<std::shared_ptr<void>> cpu_matmul_s8_prepare_avx2(const Graph& graph, const Node& node,
                                                         ThreadPool* pool) {
  auto state = std::make_shared<S8State>();
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
    // W[N, K] (nk) or W[K, N] (kn): quantized per output channel into the same panels.
    const bool nk = layout == ops::LinearWeight::nk;
    const int64_t n = w->desc.dim(nk ? 0 : 1), k = w->desc.dim(nk ? 1 : 0);
    const int64_t panels = (n + s8::kPanelWidth - 1) / s8::kPanelWidth;
    const int64_t bytes = panels * ((k + 1) / 2) * 32 * int64_t(sizeof(int16_t)) + panels * 16 * 4;
    bool created = false;
    LR_ASSIGN_OR_RETURN(
        state->packed,
        gemm::shared_weight<s8::PackedWeightS8>(
            linear::weight_key(*w, layout, "s8x16"), [&] { return host::reserve_weight_copy_bytes(bytes); },
            [&] { return quantize_and_pack(*w, layout, n, k, pool); }, &created));
    // Runs read the packed copy alone: the original's file pages go, as on the f32 path.
    if (created) gemm::release_packed_weight_pages(graph, node.inputs[1]);
    const TensorDesc& x = in[0];
    LR_ASSIGN_OR_RETURN(const int64_t scratch_bytes, s8::gemm_s8_scratch_bytes(x.numel() / k, k));
    LR_ASSIGN_OR_RETURN(state->scratch, host::request_scratch(scratch_bytes));
    state->weight = w->weight_data;
    state->w_desc = w->desc;
    return std::shared_ptr<void>(state);
  }
  LR_ASSIGN_OR_RETURN(state->f32_state, cpu_matmul_prepare_avx2(graph, node, pool));
  return std::shared_ptr<void>(state);
}

Status cpu_matmul_s8_avx2(const KernelArgs& args) {
  const auto* state = static_cast<const S8State*>(args.prepared);
  if (state == nullptr || !linear::same_weight(args, state->weight, state->w_desc)) {
    KernelArgs f32 = args;
    f32.prepared = state != nullptr ? state->f32_state.get() : nullptr;
    return cpu_matmul_f32_avx2(f32);
  }
  const linear::Call c = linear::read_call(args, state->packed->n);
  // The scratch is written during the run: runs of one prepared graph are serialised.
  return s8::gemm_s8_avx2(c.x, c.rows, c.k, *state->packed, c.y, state->packed->n, &c.epilogue, c.pool,
                          state->scratch->floats(), state->scratch->bytes());
}

}  // namespace longrun::cpu
