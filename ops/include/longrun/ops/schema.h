// The op schema table: per op, its input/output arity, aliasing rules, shape/dtype
// inference and scalar reference kernel. Generated from op_list.inc.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "longrun/ops/attrs.h"
#include "longrun/status.h"
#include "longrun/tensor_desc.h"
#include "longrun/thread_pool.h"

namespace longrun {

// What a kernel sees: attributes, bound input and output views, a pool (may be null:
// run serially) and the node's prepared state (kernels keep their scratch there).
struct KernelArgs {
  const OpAttrs* attrs = nullptr;
  std::span<const TensorView> inputs;
  std::span<const TensorView> outputs;
  ThreadPool* pool = nullptr;
  // Backend-specific state made once per node when the graph was prepared (prepacked
  // weights, FFT plans, scratch); null for kernels without a prepare step.
  const void* prepared = nullptr;

  template <typename A>
  const A& attr() const {
    return std::get<A>(*attrs);
  }
};
using KernelFn = Status (*)(const KernelArgs&);

// Shape/dtype inference: checks inputs and attrs, writes the (contiguous) output descs.
// Messages name the op and the input ("softmax: input 0: axis 3 out of range for rank 2").
using InferFn = Status (*)(const OpAttrs&, std::span<const TensorDesc> inputs, std::span<TensorDesc> outputs);

struct OpSchema {
  std::string_view name;
  int min_inputs = 1;
  int max_inputs = 1;   // -1: unbounded
  int num_outputs = 1;  // attention with_lse: one more
  // Input whose buffer output 0 may reuse (same dtype and byte size, last use at this
  // node); -1 when the op cannot run in place.
  int inplace_input = -1;
  // Output 0 is a view of input 0 (same bytes, different desc): no kernel runs.
  bool is_view = false;
  InferFn infer = nullptr;
  KernelFn reference = nullptr;
};

const OpSchema& op_schema(OpKind kind);

// Whether this build has the op's kernels (CMake option LONGRUN_OPS, "all" by default: see
// third_party/cmake/longrun_op_subset.cmake). A left-out op still has its schema and shape
// inference, but no reference or cpu kernel.
bool op_in_build(OpKind kind);
// The LONGRUN_OPS this build was configured with: "all" or "matmul;add;...".
std::string_view ops_build_setting();

// Arity + attrs-variant check, then the op's InferFn.
Status infer_op(OpKind kind, const OpAttrs& attrs, std::span<const TensorDesc> inputs,
                std::vector<TensorDesc>* outputs);

// Per-op functions, defined in ops/shape/*.cpp and ops/reference/*.cpp.
#define LR_OP(name, Attrs)                                                                 \
  Status infer_##name(const OpAttrs&, std::span<const TensorDesc>, std::span<TensorDesc>); \
  Status reference_##name(const KernelArgs&);
#include "longrun/ops/op_list.inc"

}  // namespace longrun
