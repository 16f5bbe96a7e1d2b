// One TEST_CASE per op of op_list.inc: every golden case of the op, on the backend selected
// by main.cpp, in each mode that applies (graph inputs; weights bound as graph weights;
// in place). Plus the coverage report: per row of the cpu kernel table, the golden and
// differential cases, failing for a row without either. It is the last test of the last
// file (doctest runs files in name order), so it also shows what ran in this process.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "conformance/coverage.h"
#include "conformance/diff_case.h"
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
  OpTally& t = tally(op);
  t.golden_ran = true;
  for (const GoldenCase& c : file->cases) {
    bool ran = false;
    for (Mode mode : {Mode::inputs, Mode::weights, Mode::inplace}) {
      const CaseOutcome r = run_case(backend, c, mode);
      if (r.skipped) continue;
      ++runs;
      ran = true;
      CHECK_MESSAGE(r.ok, (std::string(op_name(op)) + "/" + c.name + " [" + std::string(mode_name(mode)) +
                           ", " + std::string(backend.name()) + "]: " + r.message));
      if (r.error.norm_err >= worst.norm_err) worst.norm_err = r.error.norm_err, worst_norm_case = c.name;
      if (r.error.elem_err >= worst.elem_err) worst.elem_err = r.error.elem_err, worst_elem_case = c.name;
    }
    t.golden_cases += ran;
  }
  t.golden_runs += runs;
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

// The rows of backends/cpu/kernels.inc: op name and the three kernel entries.
struct KernelRow {
  std::string op;
  std::string by_isa[3];
};

std::vector<KernelRow> cpu_kernel_rows(std::string* error) {
  const std::string path = std::string(LONGRUN_SOURCE_DIR) + "/backends/cpu/kernels.inc";
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return {};
  }
  std::vector<KernelRow> rows;
  const std::string prefix = "LR_CPU_KERNEL(";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t close = line.rfind(')');
    std::string body =
        line.substr(prefix.size(), close == std::string::npos ? std::string::npos : close - prefix.size());
    std::vector<std::string> parts;
    for (size_t pos = 0;;) {
      const size_t comma = body.find(',', pos);
      std::string part = body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      parts.push_back(part);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    if (parts.size() != 4) {
      *error = path + ": cannot parse row: " + line;
      return {};
    }
    rows.push_back(KernelRow{parts[0], {parts[1], parts[2], parts[3]}});
  }
  return rows;
}

// Last test of the last file: the coverage report. Counts are what exists (golden cases in
// the golden file, cases the differential generator makes) and what ran in this process
// (0 when the op's test was filtered out or, for the differential part, skipped on the
// reference backend). A row fails when it has no golden case or no differential case.
TEST_CASE("conformance.coverage: every cpu kernel-table row has golden and differential cases") {
  std::string error;
  const std::vector<KernelRow> rows = cpu_kernel_rows(&error);
  REQUIRE_MESSAGE(error.empty(), error);
  std::string missing;
  std::vector<bool> seen(size_t(kNumOps), false);
  std::printf("\nconformance coverage (%s): per cpu kernel-table row\n",
              conformance_backend().description().c_str());
  std::printf("  %-18s %7s %7s %7s %7s   %s\n", "op", "golden", "ran", "diff", "ran",
              "cpu kernels (scalar / avx2 / avx512)");
  for (const KernelRow& row : rows) {
    const std::optional<OpKind> op = op_kind_from_name(row.op);
    if (!op) {
      missing += "\n  " + row.op + ": kernel-table row for an op not in op_list.inc";
      continue;
    }
    seen[size_t(*op)] = true;
    Result<GoldenFile> file = load_golden_file(*op);
    const size_t golden = file.ok() ? file->cases.size() : 0;
    const size_t diff = diff::generate_cases(*op).size();
    const OpTally& t = tally(*op);
    // "-": the op's test did not run in this process (filtered out, or skipped).
    auto ran = [](bool did, int n) { return did ? std::to_string(n) : std::string("-"); };
    std::printf("  %-18s %7zu %7s %7zu %7s   %s / %s / %s\n", row.op.c_str(), golden,
                ran(t.golden_ran, t.golden_cases).c_str(), diff, ran(t.diff_ran, t.diff_cases).c_str(),
                row.by_isa[0].c_str(), row.by_isa[1].c_str(), row.by_isa[2].c_str());
    if (golden == 0)
      missing +=
          "\n  " + row.op + ": no golden cases" + (file.ok() ? "" : " (" + file.status().message() + ")");
    if (diff == 0) missing += "\n  " + row.op + ": no differential cases (no generator in diff_case.cpp)";
  }
  for (int i = 0; i < kNumOps; ++i)
    if (!seen[size_t(i)])
      missing += "\n  " + std::string(op_name(OpKind(i))) + ": no row in backends/cpu/kernels.inc";
  CHECK_MESSAGE(missing.empty(), ("kernel-table rows without cases:" + missing));
}

}  // namespace
}  // namespace longrun::conformance
