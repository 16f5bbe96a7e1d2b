// The cpu backend's cummax, cumsum, segment_max and upsample_nearest kernels (avx2 and
// avx512 levels). The scans run along the axis while the SIMD lanes span independent columns of
// the inner dims (x viewed as [outer, n, inner]); a line along the innermost axis
// (inner == 1) has no columns to vectorise over and is scanned element by element in the
// glue. Every step applies the reference's rule, so results are bit-exact: cummax as
// torch.cummax (a NaN, once seen, sticks; on equal values the later element is taken),
// cumsum as attrs.h defines it (one f32 addition per row, in scan order).
// upsample_nearest only copies: whole inner rows by memcpy, or gathered elements.
//
// As in elementwise.h, the ISA files see only the first half of this header.
#pragma once

#include <cstdint>

namespace longrun::cpu {

// Columns [0, w) of an [n, ...] slab whose rows are `stride` floats apart: y[i] = running
// max or sum of x[0..i] (or x[i..n-1] with reverse; exclusive shifts by one, starting at
// -inf for max and +0 for sum).
using RunningScanCols = void (*)(const float* x, float* y, int64_t n, int64_t w, int64_t stride, bool reverse,
                                 bool exclusive);

struct ScanIsa {
  RunningScanCols cummax_cols;
  RunningScanCols cumsum_cols;
  // Columns [0, w): y[s] = max over rows [s * segment, min(n, (s + 1) * segment)).
  void (*segment_max_cols)(const float* x, float* y, int64_t n, int64_t w, int64_t stride, int64_t segment);
};
extern const ScanIsa kScanAvx2;
extern const ScanIsa kScanAvx512;

}  // namespace longrun::cpu

#ifndef LONGRUN_CPU_ISA_FILE
#include "longrun/ops/schema.h"

namespace longrun::cpu {

Status cpu_cummax_f32_avx2(const KernelArgs& args);
Status cpu_cumsum_f32_avx2(const KernelArgs& args);
Status cpu_segment_max_f32_avx2(const KernelArgs& args);
Status cpu_cummax_f32_avx512(const KernelArgs& args);
Status cpu_cumsum_f32_avx512(const KernelArgs& args);
Status cpu_segment_max_f32_avx512(const KernelArgs& args);
// Copies only: the same kernel serves both levels.
Status cpu_upsample_nearest_f32(const KernelArgs& args);

}  // namespace longrun::cpu
#endif  // LONGRUN_CPU_ISA_FILE
