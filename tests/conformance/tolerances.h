// The one tolerance table of the conformance tests: per op and output dtype, how far a
// backend's output may be from the float64 golden (rounded once to the output dtype).
//
// Two bounds, both must hold (NaN/Inf excluded; their positions must match exactly):
//   norm_err = sqrt(sum (a - b)^2 / sum b^2)               <= max_norm_err
//   elem_err = max_i |a_i - b_i| / max(1, |b_i|)           <= max_abs_err
// (elem_err is the absolute error where |b| <= 1 and the relative error above, so one bound
// works for exp's large outputs and softmax's small ones.) A bound of 0 for both means exact:
// every element bit-identical (any NaN matches any NaN).
#pragma once

#include "longrun/dtype.h"
#include "longrun/ops/attrs.h"

namespace longrun::conformance {

struct Tolerance {
  double max_norm_err = 0.0;
  double max_abs_err = 0.0;
  const char* why = "";

  bool exact() const { return max_norm_err == 0.0 && max_abs_err == 0.0; }
};

// The tolerance for `op` producing `out` dtype. Integer outputs are always exact.
Tolerance tolerance_for(OpKind op, DType out);

}  // namespace longrun::conformance
