// The differential runner (the rules are in differential_test.cpp's header comment and
// README.md): one generated case on the backend under test against the reference backend.
#pragma once

#include <string>
#include <vector>

#include "conformance/case_runner.h"
#include "conformance/diff_case.h"
#include "longrun/backend.h"

namespace longrun::conformance {

struct DiffBackends {
  Backend* reference = nullptr;
  Backend* one = nullptr;  // the backend under test with 1 thread
  Backend* two = nullptr;  // the same backend and ISA with 2 threads; null: no thread counts (run twice)
};

// Failures and measured errors of one op's differential run.
struct DiffReport {
  ErrorStats worst;
  std::string worst_norm_case, worst_elem_case;
  int runs = 0;  // executions on the backend under test
};

// Whether the 1- and 2-thread outputs of `op` must be bitwise identical.
bool thread_invariant(OpKind op);

// Runs one case; returns its failures (empty: passed), each "[where] what".
std::vector<std::string> run_diff_case(OpKind op, const diff::DiffCase& c, const DiffBackends& b,
                                       DiffReport& rep);

}  // namespace longrun::conformance
