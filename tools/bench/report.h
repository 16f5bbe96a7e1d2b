// Output of longrun-bench: a human table (one row per measurement, one extra row per further
// peer) and, with --json, one JSON object per line.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "bench_case.h"
#include "timing.h"

namespace longrun::bench {

struct PeerResult {
  std::string name;
  Timing timing;
  std::optional<PairedRatio> paired;  // ops --paired: the round-by-round ratio
};

// One measurement of one case on one engine (and optionally one peer).
struct Row {
  std::string op, shape;
  int64_t n = 0;
  std::string backend, isa;  // isa "-" where the backend has none
  int threads = 1;
  std::string precision = "f32";  // BackendOptions::precision (precision_name)
  int warmup = 0, repeat = 0;
  Timing timing;
  double flops = 0, bytes = 0;
  std::optional<PeerResult> peer;
  std::string error;     // when set, the case failed and timing is meaningless
  bool skipped = false;  // the backend does not support the case (error says why)
};

class Reporter {
 public:
  // `table` receives the human table; `json` (may be null) the JSON lines.
  // `paired`: the table has a column for PeerResult::paired (ops --paired).
  Reporter(std::FILE* table, std::FILE* json, bool paired = false)
      : table_(table), json_(json), paired_(paired) {}
  void header(const std::string& title);
  // `continuation`: a further peer of the row before (only the peer columns are printed).
  void row(const Row& r, bool continuation);

 private:
  void json_line(const Row& r);
  std::FILE* table_;
  std::FILE* json_;
  bool paired_;
};

// Where a command's --json lines go: nowhere (file null) for "", stdout for "-", else a file
// opened for writing and closed with the sink. The table then goes to stderr when the JSON
// goes to stdout (table()).
struct JsonSink {
  std::FILE* file = nullptr;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned{nullptr, &std::fclose};
  std::FILE* table() const { return file == stdout ? stderr : stdout; }
};
// Opens --json `path` into *sink; false (after a message on stderr naming --json and the
// file) when the file cannot be opened.
bool open_json(const std::string& path, JsonSink* sink);

// JSON string literal (quotes, escapes) of s.
std::string json_string(const std::string& s);
// JSON number with enough digits for any timing ("null" for NaN/inf).
std::string json_number(double v);
// The fields every result line of ops and models shares, each with its leading comma:
// backend, isa (null for "-"), threads, warmup and repeat; then either the failure
// ("skipped" or "error": message) or the timings (median_ms, min_ms, max_ms).
std::string json_engine_fields(const std::string& backend, const std::string& isa, int threads, int warmup,
                               int repeat);
std::string json_failure_field(const std::string& error, bool skipped);
std::string json_timing_fields(const Timing& t);
// Milliseconds for the table, with digits that fit the magnitude.
std::string ms_text(double ms);

}  // namespace longrun::bench
