// Runs one golden case on a backend and compares with the golden output (float64 results
// rounded once, tests/oracles/make_op_goldens.py). The case runs in a mode (case_runner.h)
// into an output with guard bytes, twice, and the harness requires: guards intact, inputs
// unchanged, NaN/Inf at the golden's positions, the error within tolerances.cpp, and both
// runs bit-identical.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "conformance/case_runner.h"
#include "conformance/golden_cases.h"
#include "conformance/tolerances.h"
#include "longrun/backend.h"

namespace longrun::conformance {

struct CaseOutcome {
  bool skipped = false;  // the mode does not apply to this case (not a failure)
  bool ok = true;
  std::string message;  // failure details, or why the mode was skipped
  ErrorStats error;     // of the first run against the golden
};

// The backend under test, created once by main.cpp from LONGRUN_TEST_BACKEND /
// LONGRUN_CPU_ISA, with the name and options it was created with (the differential tests
// create more instances of it: other thread counts).
Backend& conformance_backend();
const std::string& conformance_backend_name();
const BackendOptions& conformance_backend_options();
void set_conformance_backend(std::unique_ptr<Backend> backend, std::string name = {},
                             BackendOptions options = {});

CaseOutcome run_case(Backend& backend, const GoldenCase& c, Mode mode);

// compare_outputs against a golden entry.
std::string compare_with_golden(const SafetensorsEntry& expected, std::span<const std::byte> actual,
                                const Tolerance& tol, ErrorStats* stats = nullptr);

}  // namespace longrun::conformance
