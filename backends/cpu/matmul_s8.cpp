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

struct S8State : linear::Prepared<s8::PackedWeightS8> {
  // The route's quantized activations' run-time scratch (shared with the graph's other nodes).
  std::shared_ptr<const host::SharedScratch> scratch;
};

// The bytes of an [n, k] weight's panels and scales (for the weight-copy reservation).
int64_t packed_weight_bytes(int64_t n, int64_t k) {
  const int64_t panels = (n + s8::kPanelWidth - 1) / s8::kPanelWidth;
  return panels * ((k + 1) / 2) * 32 * int64_t(sizeof(int16_t)) + panels * 16 * 4;
}

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

// What quantize_and_pack holds at once besides the packed copy: a quantized weight's stored
// q and scales (stored_weight), else quantize_pack_weight_avx2's per-thread buffers.
Result<int64_t> quantize_and_pack_transient_bytes(const Value& w, ops::LinearWeight layout, int64_t n,
                                                  int64_t k, ThreadPool* pool) {
  if (w.desc.dtype() != DType::i8)
    return s8::quantize_pack_weight_transient_bytes(w.desc.dtype(), layout, n, k, pool);
  return linear::checked_bytes(n, k, 1, n * int64_t(sizeof(float)), "int8 weight '" + w.name + "'");
}

}  // namespace

Result<std::shared_ptr<void>> cpu_matmul_s8_prepare_avx2(const Graph& graph, const Node& node,
                                                         ThreadPool* pool) {
  auto state = std::make_shared<S8State>();
  // W[N, K] (nk) or W[K, N] (kn): quantized per output channel into the same panels.
  auto pack = [pool](const Value& w, ops::LinearWeight layout, int64_t n, int64_t k) {
    return quantize_and_pack(w, layout, n, k, pool);
  };
  auto transient = [pool](const Value& w, ops::LinearWeight layout, int64_t n, int64_t k) {
    return quantize_and_pack_transient_bytes(w, layout, n, k, pool);
  };
  LR_RETURN_IF_ERROR(
      linear::prepare_linear(graph, node, pool, "s8x16", packed_weight_bytes, pack, transient, *state));
  if (state->weight != nullptr) {
    const TensorDesc& x = graph.value(node.inputs[0]).desc;
    LR_ASSIGN_OR_RETURN(const int64_t scratch_bytes,
                        s8::gemm_s8_scratch_bytes(x.numel() / state->packed->k, state->packed->k));
    LR_ASSIGN_OR_RETURN(state->scratch, host::request_scratch(scratch_bytes));
  }
  return std::shared_ptr<void>(state);
}

Status cpu_matmul_s8_avx2(const KernelArgs& args) {
  const auto* state = static_cast<const S8State*>(args.prepared);
  if (!linear::on_route(args, state)) return linear::run_f32(args, state);
  const linear::Call c = linear::read_call(args, state->packed->n);
  // The scratch is written during the run: runs of one prepared graph are serialised.
  return s8::gemm_s8_avx2(c.x, c.rows, c.k, *state->packed, c.y, state->packed->n, &c.epilogue, c.pool,
                          state->scratch->floats(), state->scratch->bytes());
}

}  // namespace longrun::cpu
