// The reference backend's f32 matmul for a quantized B (matmul_dequantized.h).
#include "backends/reference/matmul_dequantized.h"

#include <string>
#include <vector>

#include "longrun/ops/reduced_precision.h"

namespace longrun::reference {
namespace {

struct DequantizedState {
  const void* weight = nullptr;  // the quantized weight
  TensorDesc w_desc;
  std::vector<float> values;  // its f32 values, in its shape
};

}  // namespace

Result<std::shared_ptr<void>> matmul_dequantized_prepare(const Graph& graph, const Node& node, ThreadPool*) {
  if (node.inputs.size() < 2) return std::shared_ptr<void>();
  const Value& w = graph.value(node.inputs[1]);
  if (w.desc.dtype() != DType::i8) return std::shared_ptr<void>();
  LR_RETURN_IF_ERROR(host::reserve_weight_copy_bytes(w.desc.numel() * int64_t(sizeof(float))));
  auto state = std::make_shared<DequantizedState>();
  auto values = ops::dequantized_copy(w);
  if (!values.ok()) return values.status().with_context("matmul '" + node.name + "'");
  state->values = std::move(values).value();
  state->weight = w.weight_data;
  state->w_desc = w.desc;
  return std::shared_ptr<void>(state);
}

Status reference_matmul_reading(const KernelArgs& args, const float* a, const float* b) {
  std::vector<TensorView> in(args.inputs.begin(), args.inputs.end());
  if (a != nullptr) in[0].data = const_cast<float*>(a);
  if (b != nullptr) {
    in[1].desc = TensorDesc(DType::f32, in[1].desc.dims());
    in[1].data = const_cast<float*>(b);
  }
  KernelArgs read = args;
  read.inputs = in;
  read.prepared = nullptr;
  return op_schema(OpKind::matmul).reference(read);
}

Status matmul_dequantized(const KernelArgs& args) {
  const auto* state = static_cast<const DequantizedState*>(args.prepared);
  if (args.inputs.size() >= 2 && args.inputs[1].desc.dtype() == DType::i8) {
    if (state == nullptr || args.inputs[1].data != state->weight || args.inputs[1].desc != state->w_desc)
      return invalid_argument("reference matmul: a quantized (i8) B other than the one prepared");
    return reference_matmul_reading(args, nullptr, state->values.data());
  }
  return reference_matmul_reading(args, nullptr, nullptr);
}

}  // namespace longrun::reference
