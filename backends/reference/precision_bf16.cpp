// The reference backend at bf16 precision (docs/usage.md#precision): ops::bf16's definition
// run by the f32 reference matmul on rounded operands. A bf16 value is exact in f32 and each
// product of two is exact in double, so the reference matmul's double sums and epilogue give
// act(alpha · Σ_k round(x) · round(W) + bias + beta · C) with one rounding of the sum.
#include "reference/precision_bf16.h"

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "longrun/graph.h"
#include "longrun/ops/reduced_precision.h"
#include "longrun/ops/schema.h"
#include "reference/matmul_dequantized.h"

namespace longrun {
namespace {

struct RefBF16State {
  const void* weight = nullptr;  // the linear layer's weight; null: not a linear layer
  TensorDesc w_desc;
  // An f32 or f16 weight rounded to bf16 (as f32 of the weight's shape); empty for a bf16
  // weight, which the reference matmul reads as it is.
  std::vector<float> w_rounded;
};

Result<std::shared_ptr<void>> prepare_bf16(const Graph& graph, const Node& node, ThreadPool*) {
  auto state = std::make_shared<RefBF16State>();
  std::vector<TensorDesc> in;
  for (ValueId v : node.inputs) in.push_back(graph.value(v).desc);
  const Value* w = node.inputs.size() >= 2 ? &graph.value(node.inputs[1]) : nullptr;
  if (!std::holds_alternative<MatmulAttrs>(node.attrs) || node.outputs.size() != 1 || w == nullptr ||
      w->role != ValueRole::weight || w->weight_data == nullptr ||
      ops::linear_weight_layout(std::get<MatmulAttrs>(node.attrs), in, graph.value(node.outputs[0]).desc) ==
          ops::LinearWeight::none) {
    if (w != nullptr && w->desc.dtype() == DType::i8)
      return unsupported("matmul '" + node.name + "': quantized weight '" + w->name +
                         "' is used other than as a linear layer's weight");
    return std::shared_ptr<void>(state);
  }
  state->weight = w->weight_data;
  state->w_desc = w->desc;
  if (w->desc.dtype() != DType::bf16) {
    const int64_t n = w->desc.numel();
    LR_RETURN_IF_ERROR(host::reserve_weight_copy_bytes(n * int64_t(sizeof(float))));
    // Rounded in the stored order: as an [n·k] "nk" matrix of one channel.
    // A quantized weight: its f32 values q · scale, rounded like any f32 weight.
    const bool deq = w->desc.dtype() == DType::i8;
    std::vector<float> dequantized;
    if (deq) {
      LR_ASSIGN_OR_RETURN(dequantized, ops::dequantized_copy(*w));
    }
    LR_ASSIGN_OR_RETURN(
        ops::bf16::RoundedWeight r,
        ops::bf16::round_weight(deq ? dequantized.data() : w->weight_data, deq ? DType::f32 : w->desc.dtype(),
                                ops::LinearWeight::nk, 1, n));
    try {
      state->w_rounded.resize(size_t(n));
    } catch (const std::bad_alloc&) {
      return out_of_memory("reference bf16 matmul: cannot allocate the rounded weight " +
                           w->desc.to_string());
    }
    for (int64_t i = 0; i < n; ++i) state->w_rounded[size_t(i)] = bf16_to_f32(r.w[size_t(i)]);
  }
  return std::shared_ptr<void>(state);
}

Status run_bf16(const KernelArgs& args) {
  const KernelFn f32 = op_schema(OpKind::matmul).reference;
  const auto* state = static_cast<const RefBF16State*>(args.prepared);
  if (state == nullptr || state->weight == nullptr || args.inputs.size() < 2 ||
      args.inputs[1].data != state->weight || args.inputs[1].desc != state->w_desc)
    return f32(args);
  const TensorView& x = args.inputs[0];
  std::vector<float> xr;
  try {
    xr.resize(size_t(x.desc.numel()));
  } catch (const std::bad_alloc&) {
    return out_of_memory("reference bf16 matmul: cannot allocate the rounded input " + x.desc.to_string());
  }
  for (size_t i = 0; i < xr.size(); ++i) xr[i] = ops::bf16::round(x.ptr<const float>()[i]);  // contiguous
  return reference::reference_matmul_reading(args, xr.data(),
                                             state->w_rounded.empty() ? nullptr : state->w_rounded.data());
}

}  // namespace

host::HostKernel reference_matmul_bf16_kernel() {
  if (!op_schema(OpKind::matmul).reference) return {};
  return {&run_bf16, &prepare_bf16};
}

}  // namespace longrun
