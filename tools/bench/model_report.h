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
  std::string backend, isa;       // isa "-" where the backend has none
  std::string precision = "f32";  // BackendOptions::precision (precision_name)
  int threads = 1;
  int warmup = 0, repeat = 0;
  Timing timing;
  int64_t arena_bytes = 0, peak_live_bytes = 0, weight_bytes = 0;  // the planner's memory report
  int64_t io_bytes = 0;            // graph inputs + outputs (caller buffers, outside the arena)
  int64_t workspace_bytes = 0;     // the backend's kernel scratch (MemoryReport::workspace_bytes)
  int64_t weight_copy_bytes = 0;   // the backend's weight copies (prepacked GEMM weights)
  int64_t peak_rss_bytes = -1;     // the process's resident peak during the runs (-1: unknown)
  std::optional<PeerResult> peer;  // the baseline preset, same N and engine
  std::string sweep;               // "scale" for rows of the scaling sweep (--scale), else ""
  std::string error;               // when set, the case failed and timing is meaningless
  bool skipped = false;
  double tokens_per_s() const;
  // The memory budgets: peak memory <= weights + arena + inputs/outputs + kMemorySlack, and
  // the arena within kArenaSlack x the planner's lower bound (peak_live_bytes). The run's
  // inputs and outputs are the caller's buffers and are added to the bound: an
  // encoder-decoder's logits [N, V] alone are 128 MiB at N = 4096, V = 8192. "weights" are
  // the graph's weight values (MemoryReport::weight_bytes_mapped), graph-owned constants
  // included: the Combiner's sinusoidal table [N, D] is built with the graph and grows with
  // N. The prepacked GEMM weights replace the file pages of the originals (gemm.cpp), so
  // they are in "weights" too. kMemorySlack holds what does not grow with N: the binary and its libraries
  // (~12 MiB), the kernels' shared scratch (at most 16 MiB of per-run packed B -- one B
  // matrix over that is packed in column slabs -- plus per-chunk A blocks, and attention
  // buffers of a few MiB at N = 65,536), the thread pool's stacks and the allocator's slack.
  static constexpr int64_t kMemorySlack = int64_t(64) << 20;
  static constexpr double kArenaSlack = 1.2;
  int64_t memory_bound_bytes() const { return weight_bytes + arena_bytes + io_bytes + kMemorySlack; }
  bool memory_ok() const { return peak_rss_bytes >= 0 && peak_rss_bytes <= memory_bound_bytes(); }
  double arena_ratio() const {
    return peak_live_bytes > 0 ? double(arena_bytes) / double(peak_live_bytes) : 1.0;
  }
  bool arena_ok() const { return arena_ratio() <= kArenaSlack; }
};

class ModelReporter {
 public:
  ModelReporter(std::FILE* table, std::FILE* json) : table_(table), json_(json) {}
  void header(const std::string& title);
  void row(const ModelRow& r);
  // A free line in the table stream (e.g. a model's output values).
  void note(const std::string& line);

 private:
  std::FILE* table_;
  std::FILE* json_;
};

}  // namespace longrun::bench
