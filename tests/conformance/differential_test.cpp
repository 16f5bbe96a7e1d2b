// Differential tests: every case of every op's generator (diff_gen_*.cpp) runs on the
// backend under test and on the reference backend, and the outputs are compared under the
// one tolerance table (tolerances.cpp), with NaN/Inf position parity, guard bytes after
// every output and inputs unchanged (case_runner.h). Per case, on the backend under test:
//   inputs mode with 1 thread, then with 2 threads twice: the two 2-thread runs must be
//   bitwise identical (same build + ISA + thread count => bitwise), and so must the 1- and
//   2-thread runs (the cpu kernels partition work thread-count-invariantly);
//   weights mode (weights bound as graph weights: prepacking) with 1 and 2 threads;
//   inplace mode (ops with schema inplace_input >= 0) with 2 threads.
// A case the reference rejects (expect_error) must be rejected with the same status code.
// On the reference backend itself the differential part is skipped (it would compare the
// reference with itself); a backend without thread counts (cuda) runs twice instead.
#include "conformance/differential.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conformance/coverage.h"
#include "conformance/diff_case.h"
#include "conformance/run_case.h"
#include "longrun/ops/schema.h"

namespace longrun::conformance {
namespace {

using diff::DiffCase;

// The backends of this process's differential runs, created once.
struct Instances {
  std::string skip;  // non-empty: the differential tests do not apply (why)
  std::unique_ptr<Backend> reference, two;
  DiffBackends b;
};

Instances& instances() {
  static Instances in = [] {
    Instances d;
    const std::string& name = conformance_backend_name();
    if (name.empty() || name == "reference") {
      d.skip = "the backend under test is the reference backend: comparing it with itself proves nothing";
      return d;
    }
    Result<std::unique_ptr<Backend>> ref = create_backend("reference");
    if (!ref.ok()) {
      d.skip = "cannot create the reference backend: " + ref.status().to_string();
      return d;
    }
    d.reference = std::move(ref).value();
    d.b.reference = d.reference.get();
    d.b.one = &conformance_backend();
    if (name == "cpu") {
      BackendOptions two = conformance_backend_options();
      two.threads = 2;
      Result<std::unique_ptr<Backend>> t = create_backend(name, two);
      if (!t.ok()) {
        d.skip = "cannot create the 2-thread cpu backend: " + t.status().to_string();
        return d;
      }
      d.two = std::move(t).value();
      d.b.two = d.two.get();
    }
    return d;
  }();
  return in;
}

void run_op_differential(OpKind op) {
  Instances& in = instances();
  if (!in.skip.empty()) {
    static bool said = false;  // once per process, not once per op
    if (!std::exchange(said, true)) MESSAGE("differential tests skipped: " << in.skip);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<DiffCase> cases = diff::generate_cases(op);
  REQUIRE_MESSAGE(!cases.empty(), "no differential generator for " << op_name(op) << " (diff_case.cpp)");
  DiffReport rep;
  std::vector<std::string> failures;
  std::set<std::string> names;
  OpTally& t = tally(op);
  t.diff_ran = true;
  int failed_cases = 0;
  for (const DiffCase& c : cases) {
    if (!names.insert(c.name).second) failures.push_back(c.name + ": duplicate case name (generator bug)");
    const std::vector<std::string> f = run_diff_case(op, c, in.b, rep);
    ++t.diff_cases;
    if (f.empty()) continue;
    ++failed_cases;
    for (const std::string& s : f) failures.push_back(std::string(op_name(op)) + "/" + c.name + " " + s);
  }
  t.diff_runs += rep.runs;
  constexpr size_t kShown = 12;
  for (size_t i = 0; i < failures.size() && i < kShown; ++i) FAIL_CHECK(failures[i]);
  if (failures.size() > kShown)
    FAIL_CHECK(std::to_string(failures.size() - kShown)
               << " more failures in " << op_name(op) << " (" << failed_cases << " of " << cases.size()
               << " cases failed)");
  const char* report = std::getenv("LONGRUN_CONFORMANCE_REPORT");
  if (report && *report && *report != '0') {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Tolerance tol = tolerance_for(op, DType::f32);
    std::printf(
        "diff %-17s %4zu cases %5d runs %6.2f s  norm %.3g (%s, bound %.3g)  elem %.3g (%s, bound %.3g)\n",
        std::string(op_name(op)).c_str(), cases.size(), rep.runs, s, rep.worst.norm_err,
        rep.worst_norm_case.c_str(), tol.max_norm_err, rep.worst.elem_err, rep.worst_elem_case.c_str(),
        tol.max_abs_err);
  }
}

#define LR_OP(name, Attrs) \
  TEST_CASE("differential." #name) { run_op_differential(OpKind::name); }
#include "longrun/ops/op_list.inc"

TEST_CASE("differential.generators: every op in op_list.inc has a generator") {
  std::string missing;
  for (int i = 0; i < kNumOps; ++i)
    if (diff::generator_for(OpKind(i)) == nullptr) missing += " " + std::string(op_name(OpKind(i)));
  CHECK_MESSAGE(missing.empty(),
                "ops without a differential generator (tests/conformance/diff_case.cpp):" << missing);
}

}  // namespace
}  // namespace longrun::conformance
