// Per-op counts of the cases that ran in this process, filled by the golden and the
// differential tests and printed by the coverage report (ops_conformance_test.cpp).
#pragma once

#include "longrun/ops/attrs.h"

namespace longrun::conformance {

struct OpTally {
  int golden_cases = 0;  // golden cases with at least one mode that ran
  int golden_runs = 0;   // (case, mode) pairs
  int diff_cases = 0;    // differential cases that ran on the backend under test
  int diff_runs = 0;     // executions on the backend under test (modes x thread counts x repeats)
  bool golden_ran = false, diff_ran = false;  // the op's test ran in this process
};

OpTally& tally(OpKind op);

}  // namespace longrun::conformance
