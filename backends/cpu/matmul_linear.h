// What the cpu backend's reduced-precision matmuls (matmul_s8.cpp, matmul_bf16.cpp) share: the
// cache key of a linear layer's packed weight and the reading of a linear layer's run
// arguments. Included only by those two files.
#pragma once

#include <cstdint>
#include <string>

#include "backends/cpu/gemm.h"
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

// Whether this call's weight operand is the one the route was prepared for (address and
// desc); otherwise the call runs the f32 kernel.
inline bool same_weight(const KernelArgs& args, const void* weight, const TensorDesc& w_desc) {
  return weight != nullptr && args.inputs.size() >= 2 && args.inputs[1].data == weight &&
         args.inputs[1].desc == w_desc;
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
