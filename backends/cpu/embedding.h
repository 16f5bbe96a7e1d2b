// The cpu backend's embedding kernel: every id is checked first (a bad id leaves the output
// untouched and the reference kernel reports the first one), then rows are copied (f32
// tables) or widened with the elementwise ISA primitives (f16/bf16 tables), in parallel
// over ids.
#pragma once

#include "longrun/ops/schema.h"

namespace longrun::cpu {

Status cpu_embedding_avx2(const KernelArgs& args);
Status cpu_embedding_avx512(const KernelArgs& args);

}  // namespace longrun::cpu
