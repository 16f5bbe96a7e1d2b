// What the cpu backend's reduced-precision matmuls (matmul_s8.cpp, matmul_bf16.cpp) share: the
// prepare step that finds a linear layer and its packed weight, the cache key of that weight,
// the choice between that route and the f32 kernel at run time, and the reading of a linear
// layer's run arguments. Included only by those two files.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_weight_cache.h"
#include "backends/host/host_executor.h"
#include "longrun/graph.h"
#include "longrun/ops/reduced_precision.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu::linear {

// What a packed copy of weight `w` depends on (gemm_weight_cache.h): the weight's address and
// desc, its layout and the packed `format`.
inline std::string weight_key(const Value& w, ops::LinearWeight layout, const char* format) {
  return std::to_string(reinterpret_cast<uintptr_t>(w.weight_data)) + " " + w.desc.to_string() +
         (layout == ops::LinearWeight::nk ? " nk " : " kn ") + format;
}

// A matmul's prepared state: the route of a linear layer (taken when weight is set) with its
// packed weight of type Packed, otherwise the f32 kernel's prepared state.
template <class Packed>
struct Prepared {
  const void* weight = nullptr;  // the weight the packed copy was made from
  TensorDesc w_desc;
  std::shared_ptr<const Packed> packed;  // shared with other plans (gemm_weight_cache.h)
  std::shared_ptr<void> f32_state;
};

// Prepares `node` into `state`. A linear layer (ops::linear_weight_layout) whose weight is a
// constant of the model, W[N, K] (nk) or W[K, N] (kn), takes the route: its packed copy in
// `format` comes from the process's cache (gemm::shared_weight), made on a miss by
// pack(w, layout, n, k) after reserving packed_bytes(n, k) bytes, and the weight's file pages
// are released once this call has made the copy (runs read the packed copy alone, as on the
// f32 path). transient_bytes(w, layout, n, k) (a Result<int64_t>) is what pack() holds at
// once beside the copy while it makes it: reserved as the peak, not kept in the report. Any
// other matmul prepares the f32 kernel.
template <class Packed, class PackedBytes, class Pack, class TransientBytes>
Status prepare_linear(const Graph& graph, const Node& node, ThreadPool* pool, const char* format,
                      PackedBytes packed_bytes, Pack pack, TransientBytes transient_bytes,
                      Prepared<Packed>& state) {
  std::vector<TensorDesc> in;
  for (ValueId v : node.inputs) in.push_back(graph.value(v).desc);
  const Value* w = node.inputs.size() >= 2 ? &graph.value(node.inputs[1]) : nullptr;
  const ops::LinearWeight layout = std::holds_alternative<MatmulAttrs>(node.attrs) &&
                                           node.outputs.size() == 1 && w != nullptr &&
                                           w->role == ValueRole::weight && w->weight_data != nullptr
                                       ? ops::linear_weight_layout(std::get<MatmulAttrs>(node.attrs), in,
                                                                   graph.value(node.outputs[0]).desc)
                                       : ops::LinearWeight::none;
  if (layout == ops::LinearWeight::none) {
    LR_ASSIGN_OR_RETURN(state.f32_state, cpu_matmul_prepare_avx2(graph, node, pool));
    return {};
  }
  const bool nk = layout == ops::LinearWeight::nk;
  const int64_t n = w->desc.dim(nk ? 0 : 1), k = w->desc.dim(nk ? 1 : 0);
  bool created = false;
  LR_ASSIGN_OR_RETURN(state.packed,
                      gemm::shared_weight<Packed>(
                          weight_key(*w, layout, format),
                          [&]() -> Status {
                            LR_ASSIGN_OR_RETURN(const int64_t transient, transient_bytes(*w, layout, n, k));
                            return host::reserve_weight_copy_bytes(packed_bytes(n, k), transient);
                          },
                          [&] { return pack(*w, layout, n, k); }, &created));
  if (created) gemm::release_packed_weight_pages(graph, node.inputs[1]);
  state.weight = w->weight_data;
  state.w_desc = w->desc;
  return {};
}

// n · k · bytes_each + extra (the bytes of a buffer over an [n, k] weight), or invalid_argument
// naming `what` when it does not fit in int64.
inline Result<int64_t> checked_bytes(int64_t n, int64_t k, int64_t bytes_each, int64_t extra,
                                     const std::string& what) {
  int64_t elems = 0, product = 0, sum = 0;
  if (n < 0 || k < 0 || bytes_each < 0 || extra < 0 || __builtin_mul_overflow(n, k, &elems) ||
      __builtin_mul_overflow(elems, bytes_each, &product) || __builtin_add_overflow(product, extra, &sum))
    return invalid_argument(what + ": [" + std::to_string(n) + ", " + std::to_string(k) + "] elements of " +
                            std::to_string(bytes_each) + " bytes + " + std::to_string(extra) +
                            " bytes overflow int64");
  return sum;
}

// Whether this call takes the route `state` prepared: its weight operand is the one the
// packed copy was made from (address and desc). Otherwise the call runs run_f32.
template <class Packed>
bool on_route(const KernelArgs& args, const Prepared<Packed>* state) {
  return state != nullptr && state->weight != nullptr && args.inputs.size() >= 2 &&
         args.inputs[1].data == state->weight && args.inputs[1].desc == state->w_desc;
}

// The call on the f32 kernel, with the f32 state `state` prepared (none without a state).
template <class Packed>
Status run_f32(const KernelArgs& args, const Prepared<Packed>* state) {
  KernelArgs f32 = args;
  f32.prepared = state != nullptr ? state->f32_state.get() : nullptr;
  return cpu_matmul_f32_avx2(f32);
}

// A linear layer's call: x as `rows` rows of K floats, y as rows of N, the matmul's epilogue
// (alpha, activation, bias, beta · C) and the pool to thread over (null: one thread).
struct Call {
  const float* x = nullptr;
  int64_t rows = 0, k = 0;
  float* y = nullptr;
  gemm::Epilogue epilogue;
  ThreadPool* pool = nullptr;
};
inline Call read_call(const KernelArgs& args, int64_t n) {
  const MatmulAttrs& at = args.attr<MatmulAttrs>();
  const TensorView& x = args.inputs[0];
  Call c;
  c.x = x.ptr<const float>();
  c.k = x.desc.dim(x.desc.rank() - 1);
  c.rows = c.k > 0 ? x.desc.numel() / c.k : 0;
  c.y = args.outputs[0].ptr<float>();
  c.epilogue.alpha = at.alpha;
  c.epilogue.act = at.activation;
  size_t next = 2;
  if (at.has_bias) c.epilogue.bias = args.inputs[next++].ptr<const float>();
  if (at.has_c) {
    c.epilogue.c = args.inputs[next].ptr<const float>();
    c.epilogue.ldc = n;
    c.epilogue.beta = at.beta;
  }
  c.pool = args.pool != nullptr && args.pool->num_threads() > 1 ? args.pool : nullptr;
  return c;
}

}  // namespace longrun::cpu::linear
