// The reference backend's kernels at bf16 precision (precision_bf16.cpp): matmul and
// sparse_attention.
#pragma once

#include "host/host_executor.h"

namespace longrun {

// A linear layer with a constant weight (ops::linear_weight_layout) computed from the
// bf16-rounded x and W by the reference matmul (double sums, its epilogue); every other matmul
// is the f32 reference matmul. Empty when the build has no matmul (LONGRUN_OPS).
host::HostKernel reference_matmul_bf16_kernel();

// sparse_attention with f32 K and V of rank 4: the reference kernel on K and V rounded to
// bf16 (f32_to_bf16, into contiguous bf16 tensors), as the cpu backend's bf16 sessions
// gather them; any other K and V as given. Empty when the build has no sparse_attention.
host::HostKernel reference_sparse_attention_bf16_kernel();

}  // namespace longrun
