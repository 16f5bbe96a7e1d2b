// Declarations of the cpu backend's hand-written kernels (one block per op family), used by
// kernels.inc. Symbols say op, dtype and ISA: cpu_<op>_f32_<isa>. Each is defined in a
// file compiled with that ISA's flags (*_avx2.cpp, *_avx512.cpp).
#pragma once

#include "cpu/attention.h"
#include "cpu/dct.h"
#include "cpu/elementwise.h"
#include "cpu/embedding.h"
#include "cpu/gemm.h"
#include "cpu/layout.h"
#include "cpu/normalization.h"
#include "cpu/scan.h"
#include "cpu/selection.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu {}  // namespace longrun::cpu
