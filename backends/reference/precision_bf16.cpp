// The reference backend at bf16 precision (docs/usage.md#precision): ops::bf16's definition
// run by the f32 reference matmul on rounded operands, and sparse_attention on K and V
// rounded to bf16. A bf16 value is exact in f32 and each
// product of two is exact in double, so the reference matmul's double sums and epilogue give
// act(alpha · Σ_k round(x) · round(W) + bias + beta · C) with one rounding of the sum.
#include "reference/precision_bf16.h"

#include <memory>
#include <new>
#include <string>
#include <utility>
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
    if (w->desc.dtype() == DType::i8 && !scales_tile(w->desc, w->scales))
      return internal_error("reference bf16 matmul: '" + w->name + "' " + w->desc.to_string() +
                            " is not a quantized weight");
    LR_RETURN_IF_ERROR(host::reserve_weight_copy_bytes(n * int64_t(sizeof(float))));
    try {
      state->w_rounded.resize(size_t(n));
    } catch (const std::bad_alloc&) {
      return out_of_memory("reference bf16 matmul: cannot allocate the rounded weight " +
                           w->desc.to_string());
    }
    // Widened (a quantized weight: its f32 values q · scale) and rounded in place, in the
    // stored order, so the copy is all the memory this takes.
    float* r = state->w_rounded.data();
    if (w->desc.dtype() == DType::i8) {
      dequantize_weight(*w, r);
    } else {
      for (int64_t i = 0; i < n; ++i) r[i] = float_element(w->weight_data, w->desc.dtype(), i);
    }
    for (int64_t i = 0; i < n; ++i) r[i] = ops::bf16::round(r[i]);
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

// sparse_attention: f32 K and V rounded to bf16 copies, then the reference kernel, which
// widens them exactly as it reads them.
Status run_sparse_attention_bf16(const KernelArgs& args) {
  const KernelFn f32 = op_schema(OpKind::sparse_attention).reference;
  if (args.inputs.size() != 4) return f32(args);
  const TensorView &k = args.inputs[1], &v = args.inputs[2];
  if (k.desc.dtype() != DType::f32 || v.desc.dtype() != DType::f32 || k.desc.rank() != 4 ||
      v.desc.rank() != 4)
    return f32(args);
  std::vector<uint16_t> k16, v16;
  for (auto [t, out] : {std::pair{&k, &k16}, std::pair{&v, &v16}}) {
    const TensorDesc& d = t->desc;
    try {
      out->resize(size_t(d.numel()));
    } catch (const std::bad_alloc&) {
      return out_of_memory("reference bf16 sparse_attention: cannot allocate the rounded input " +
                           d.to_string());
    }
    size_t o = 0;
    for (int64_t a = 0; a < d.dim(0); ++a)
      for (int64_t b = 0; b < d.dim(1); ++b)
        for (int64_t c = 0; c < d.dim(2); ++c)
          for (int64_t e = 0; e < d.dim(3); ++e)
            (*out)[o++] = f32_to_bf16(
                t->ptr<const float>()[a * d.stride(0) + b * d.stride(1) + c * d.stride(2) + e * d.stride(3)]);
  }
  const TensorView in[4] = {args.inputs[0],
                            {TensorDesc(DType::bf16, k.desc.dims()), k16.data()},
                            {TensorDesc(DType::bf16, v.desc.dims()), v16.data()},
                            args.inputs[3]};
  KernelArgs rounded = args;
  rounded.inputs = in;
  return f32(rounded);
}

}  // namespace

host::HostKernel reference_sparse_attention_bf16_kernel() {
  if (!op_schema(OpKind::sparse_attention).reference) return {};
  return {&run_sparse_attention_bf16};
}

host::HostKernel reference_matmul_bf16_kernel() {
  if (!op_schema(OpKind::matmul).reference) return {};
  return {&run_bf16, &prepare_bf16};
}

}  // namespace longrun
