// Declarations of the cpu backend's hand-written kernels (one header per op family), used
// by kernels.inc. Kernels are named cpu_<op>_<dtype>_<isa> (the rule, with its two
// omissions and the _with_prepare pairs, is in the header comment of kernels.inc). ISA
// kernels are defined in files compiled with that ISA's flags (*_avx2.cpp, *_avx512.cpp).
#pragma once

#include "cpu/attention.h"
#include "cpu/dct.h"
#include "cpu/elementwise.h"
#include "cpu/embedding.h"
#include "cpu/gemm.h"
#include "cpu/layout.h"
#include "cpu/matmul_bf16.h"
#include "cpu/matmul_s8.h"
#include "cpu/matmul_topk.h"
#include "cpu/normalization.h"
#include "cpu/scan.h"
#include "cpu/selection.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu {}  // namespace longrun::cpu
