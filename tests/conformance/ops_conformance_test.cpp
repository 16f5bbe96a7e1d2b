// One TEST_CASE per op of op_list.inc: every golden case of the op, on the backend selected
// by main.cpp, in each mode that applies (graph inputs; weights bound as graph weights;
// in place). Plus a coverage test that lists every op without golden cases.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "conformance/golden_cases.h"
#include "conformance/run_case.h"
#include "longrun/ops/schema.h"

namespace longrun::conformance {
namespace {

// LONGRUN_CONFORMANCE_REPORT=1 prints, per op, the largest measured error next to the
// bound: the headroom a backend has (for reviewing tolerances, never for loosening them).
void run_op_conformance(OpKind op) {
  Result<GoldenFile> file = load_golden_file(op);
  REQUIRE_MESSAGE(file.ok(), file.status().to_string());
  REQUIRE_FALSE(file->cases.empty());
  Backend& backend = conformance_backend();
  ErrorStats worst;
  std::string worst_norm_case, worst_elem_case;
  int runs = 0;
  for (const GoldenCase& c : file->cases) {
    for (Mode mode : {Mode::inputs, Mode::weights, Mode::inplace}) {
      const CaseOutcome r = run_case(backend, c, mode);
      if (r.skipped) continue;
      ++runs;
      CHECK_MESSAGE(r.ok, (std::string(op_name(op)) + "/" + c.name + " [" + std::string(mode_name(mode)) +
                           ", " + std::string(backend.name()) + "]: " + r.message));
      if (r.error.norm_err >= worst.norm_err) worst.norm_err = r.error.norm_err, worst_norm_case = c.name;
      if (r.error.elem_err >= worst.elem_err) worst.elem_err = r.error.elem_err, worst_elem_case = c.name;
    }
  }
  const char* report = std::getenv("LONGRUN_CONFORMANCE_REPORT");
  if (report && *report && *report != '0') {
    const Tolerance tol = tolerance_for(op, file->cases.front().output->desc.dtype());
    std::printf("%-18s %4d runs  norm %.3g (%s, bound %.3g)  elem %.3g (%s, bound %.3g)\n",
                std::string(op_name(op)).c_str(), runs, worst.norm_err, worst_norm_case.c_str(),
                tol.max_norm_err, worst.elem_err, worst_elem_case.c_str(), tol.max_abs_err);
  }
}

#define LR_OP(name, Attrs) \
  TEST_CASE("conformance." #name) { run_op_conformance(OpKind::name); }
#include "longrun/ops/op_list.inc"

TEST_CASE("conformance.coverage: every op in op_list.inc has golden cases") {
  std::string missing;
  for (int i = 0; i < kNumOps; ++i) {
    Result<GoldenFile> file = load_golden_file(OpKind(i));
    if (!file.ok())
      missing += "\n  " + std::string(op_name(OpKind(i))) + ": " + file.status().message();
    else if (file->cases.empty())
      missing += "\n  " + std::string(op_name(OpKind(i))) + ": no cases";
  }
  CHECK_MESSAGE(missing.empty(), ("ops without golden cases:" + missing));
}

TEST_CASE("conformance.tolerances: every golden output has a tolerance entry") {
  std::string missing;
  for (int i = 0; i < kNumOps; ++i) {
    Result<GoldenFile> file = load_golden_file(OpKind(i));
    if (!file.ok()) continue;
    for (const GoldenCase& c : file->cases)
      if (tolerance_for(c.op, c.output->desc.dtype()).max_norm_err < 0)
        missing +=
            "\n  " + std::string(op_name(c.op)) + " -> " + std::string(dtype_name(c.output->desc.dtype()));
  }
  CHECK_MESSAGE(missing.empty(), ("no tolerance for:" + missing));
}

}  // namespace
}  // namespace longrun::conformance
