// Runs one golden case on a backend and compares with the golden output.
//
// The graph is inputs -> op -> output (mode inputs); the same with the op's conventional
// weight operands bound as graph weights (mode weights: matmul B and bias, the embedding
// table, layer_norm gamma/beta); or, for ops whose schema allows in-place, input ->
// transpose(identity) -> op -> reshape(same dims) -> output, so the op reads an intermediate
// that dies there and the planner must give the op's output the same buffer (mode inplace;
// both extra nodes copy bits exactly). The harness allocates every output with 64 guard bytes
// after it, fills output and guard with a pattern, executes twice and requires: guards
// intact, inputs unchanged, NaN/Inf at the golden's positions, the error within
// tolerances.cpp, and both runs bit-identical.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "conformance/golden_cases.h"
#include "conformance/tolerances.h"
#include "longrun/backend.h"

namespace longrun::conformance {

enum class Mode { inputs, weights, inplace };
std::string_view mode_name(Mode mode);

// Measured error of a compared output (0 for exact comparisons that matched).
struct ErrorStats {
  double norm_err = 0.0;
  double elem_err = 0.0;
};

struct CaseOutcome {
  bool skipped = false;  // the mode does not apply to this case (not a failure)
  bool ok = true;
  std::string message;  // failure details, or why the mode was skipped
  ErrorStats error;     // of the first run against the golden
};

// The backend under test, created once by main.cpp.
Backend& conformance_backend();
void set_conformance_backend(std::unique_ptr<Backend> backend);

CaseOutcome run_case(Backend& backend, const GoldenCase& c, Mode mode);

// Compares `actual` (bytes laid out as expected.desc) with the golden. Returns "" when it
// matches within `tol`, else a message with the error measures and the first mismatches.
// `stats`, when given, receives the measured errors.
std::string compare_with_golden(const SafetensorsEntry& expected, std::span<const std::byte> actual,
                                const Tolerance& tol, ErrorStats* stats = nullptr);

}  // namespace longrun::conformance
