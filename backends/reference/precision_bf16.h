// The reference backend's matmul at bf16 precision (precision_bf16.cpp).
#pragma once

#include "host/host_executor.h"

namespace longrun {

// A linear layer with a constant weight (ops::linear_weight_layout) computed from the
// bf16-rounded x and W by the reference matmul (double sums, its epilogue); every other matmul
// is the f32 reference matmul. Empty when the build has no matmul (LONGRUN_OPS).
host::HostKernel reference_matmul_bf16_kernel();

}  // namespace longrun
