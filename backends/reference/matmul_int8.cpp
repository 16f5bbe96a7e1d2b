// The reference backend's matmul at int8 precision (docs/usage.md#precision). A linear layer
// (ops::linear_weight_layout is nk or kn and the weight is a constant of the model) runs the
// format's scalar definition (longrun/ops/reduced_precision.h): the weight quantized per
// output channel once at prepare (ops::s8::quantize_weight), each row of x per run
// (quantize_rows_reference), exact int32 sums dequantised as gemm_s8_reference does, then the
// reference matmul's epilogue in double (ref::matmul_epilogue). Every other matmul runs the
// f32 reference kernel.
#include "backends/reference/matmul_int8.h"

#include <new>
#include <string>
#include <vector>

#include "longrun/ops/reduced_precision.h"
#include "ops/reference/access.h"

namespace longrun::reference {
namespace {

struct Int8State {
  const void* weight = nullptr;  // the weight the quantized copy was made from
  TensorDesc w_desc;
  ops::s8::QuantizedWeight qw;
};

}  // namespace

Result<std::shared_ptr<void>> matmul_int8_prepare(const Graph& graph, const Node& node, ThreadPool*) {
  if (!std::holds_alternative<MatmulAttrs>(node.attrs) || node.outputs.size() != 1 || node.inputs.size() < 2)
    return std::shared_ptr<void>();
  const Value& w = graph.value(node.inputs[1]);
  if (w.role != ValueRole::weight || w.weight_data == nullptr) return std::shared_ptr<void>();
  std::vector<TensorDesc> in;
  for (ValueId v : node.inputs) in.push_back(graph.value(v).desc);
  const ops::LinearWeight layout =
      ops::linear_weight_layout(std::get<MatmulAttrs>(node.attrs), in, graph.value(node.outputs[0]).desc);
  if (layout == ops::LinearWeight::none) {
    if (w.desc.dtype() == DType::i8)
      return unsupported("matmul '" + node.name + "': quantized weight '" + w.name +
                         "' is used other than as a linear layer's weight");
    return std::shared_ptr<void>();
  }
  const bool nk = layout == ops::LinearWeight::nk;
  const int64_t n = nk ? w.desc.dim(0) : w.desc.dim(1), k = nk ? w.desc.dim(1) : w.desc.dim(0);
  // quantize_weight gathers one channel's K values as f32 while it quantizes.
  LR_RETURN_IF_ERROR(host::reserve_weight_copy_bytes(
      n * k + n * int64_t(sizeof(float)), w.desc.dtype() == DType::i8 ? 0 : k * int64_t(sizeof(float))));
  auto state = std::make_shared<Int8State>();
  if (w.desc.dtype() == DType::i8) {  // quantized in the model file: its q and scales as they are
    LR_ASSIGN_OR_RETURN(state->qw, ops::s8::stored_weight(w, layout, n, k));
  } else {
    LR_ASSIGN_OR_RETURN(state->qw, ops::s8::quantize_weight(w.weight_data, w.desc.dtype(), layout, n, k));
  }
  state->weight = w.weight_data;
  state->w_desc = w.desc;
  return std::shared_ptr<void>(state);
}

Status matmul_int8(const KernelArgs& args) {
  const auto* state = static_cast<const Int8State*>(args.prepared);
  // Not a linear layer, or a weight other than the one quantized at prepare: f32.
  if (state == nullptr || args.inputs.size() < 2 || args.inputs[1].data != state->weight ||
      args.inputs[1].desc != state->w_desc)
    return op_schema(OpKind::matmul).reference(args);
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::matmul, args));
  const MatmulAttrs& at = args.attr<MatmulAttrs>();
  const ops::s8::QuantizedWeight& qw = state->qw;
  const TensorView& x = args.inputs[0];
  const int64_t K = qw.k, N = qw.n;
  const int64_t rows = x.desc.numel() / K;  // linear_weight_layout: K > 0, x and y contiguous
  const float* bias = at.has_bias ? args.inputs[2].ptr<const float>() : nullptr;
  const float* c = at.has_c ? args.inputs[at.has_bias ? 3 : 2].ptr<const float>() : nullptr;
  float* y = args.outputs[0].ptr<float>();
  std::vector<int8_t> qa;
  std::vector<float> row;
  try {
    qa.resize(size_t(K));
    row.resize(size_t(N));
  } catch (const std::bad_alloc&) {
    return out_of_memory("reference int8 matmul: cannot allocate a row of " + std::to_string(K) + " + " +
                         std::to_string(N) + " elements");
  }
  // One row at a time: quantize x's row, its int32 products with every channel, dequantised
  // (gemm_s8_reference), then the epilogue in double.
  for (int64_t m = 0; m < rows; ++m) {
    float sa = 0.0f;
    ops::s8::quantize_rows_reference(x.ptr<const float>() + m * K, 1, K, K, qa.data(), K, &sa);
    ops::s8::gemm_s8_reference(qa.data(), K, &sa, 1, qw, row.data(), N);
    for (int64_t n = 0; n < N; ++n)
      y[m * N + n] = float(ref::matmul_epilogue(at, row[size_t(n)], bias != nullptr ? bias[n] : 0.0,
                                                c != nullptr ? c[m * N + n] : 0.0));
  }
  return {};
}

}  // namespace longrun::reference
