// Output of `longrun-bench models`: a human table (one row per model, N and engine, with the
// baseline's time and the ratio in the same row) and, with --json, one JSON object per line
// with the key conventions of `longrun-bench ops` ("model" in place of "op").
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "report.h"
#include "timing.h"

namespace longrun::bench {

struct ModelRow {
  std::string model, arch, shape;  // preset (or arch) name, longrun.arch, "B=1 N=1024"
  int64_t n = 0, batch = 1;
  std::string backend, isa;  // isa "-" where the backend has none
  int threads = 1;
  int warmup = 0, repeat = 0;
  Timing timing;
  int64_t arena_bytes = 0, peak_live_bytes = 0, weight_bytes = 0;  // the planner's memory report
  std::optional<PeerResult> peer;                                  // the baseline preset, same N and engine
  std::string error;  // when set, the case failed and timing is meaningless
  bool skipped = false;
  double tokens_per_s() const;
};

class ModelReporter {
 public:
  ModelReporter(std::FILE* table, std::FILE* json) : table_(table), json_(json) {}
  void header(const std::string& title);
  void row(const ModelRow& r);

 private:
  std::FILE* table_;
  std::FILE* json_;
};

}  // namespace longrun::bench
