// The cuda kernel table: one row per op of op_list.inc, each made next to its kernels.
#include <array>

#include "cuda/cuda_kernel.h"

namespace longrun::cuda {

const Kernel& kernel_for(OpKind kind) {
  static const std::array<Kernel, kNumOps> table = {
#define LR_OP(name, Attrs) make_kernel_##name(),
#include "longrun/ops/op_list.inc"
  };
  return table[size_t(kind)];
}

}  // namespace longrun::cuda
