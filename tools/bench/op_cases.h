// The op benchmark cases: model-shaped inputs for each op (D = 512 model width, 8 heads of
// 64, sequence length N), their work counts and their peers. The list of ops comes from
// ops/include/longrun/ops/op_list.inc; an op without a family here has no bench case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_case.h"

namespace longrun::bench {

struct CaseSelection {
  std::vector<std::string> ops;  // empty: every op with a case
  std::vector<int64_t> ns;       // empty: each op's default N (or its --quick N)
  std::string shape;             // non-empty: only cases whose shape string contains it
  bool quick = false;
  // > 0: sparse_attention draws each query's keys from the first sparse_keys key rows, not
  // from all N (a ceiling: K and V rows that stay in cache); its shape then ends in " keys<K".
  int64_t sparse_keys = 0;
};

// Ops that have bench cases, in op_list.inc order.
std::vector<std::string> bench_ops();

// One line per op: its cases and default N, for --help and --list.
std::vector<std::string> describe_cases();

// The selected cases in op_list.inc order, then by N. Cheap: nothing is allocated until a
// CaseSpec's build() runs.
std::vector<CaseSpec> select_cases(const CaseSelection& selection);

}  // namespace longrun::bench
