// The cpu backend's layout kernels: concat, slice, pad, transpose, reshape, roll, where.
// They move bytes only (any dtype), so one plain C++ kernel per op serves every ISA level:
// contiguous tensors are copied as the largest contiguous blocks the op allows (memcpy),
// transpose walks the output with an odometer when no block is contiguous, where selects
// with typed loops over numpy-broadcast runs. Strided views use the reference kernels.
#pragma once

#include "longrun/ops/schema.h"

namespace longrun::cpu {

Status cpu_concat(const KernelArgs& args);
Status cpu_slice(const KernelArgs& args);
Status cpu_pad(const KernelArgs& args);
Status cpu_transpose(const KernelArgs& args);
Status cpu_reshape(const KernelArgs& args);
Status cpu_roll(const KernelArgs& args);
Status cpu_where(const KernelArgs& args);

}  // namespace longrun::cpu
