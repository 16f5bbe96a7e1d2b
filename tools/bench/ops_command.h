// `longrun-bench ops`: every selected case on every (threads, isa, precision) engine, then its
// peers.
#pragma once

#include <string>
#include <vector>

#include "op_cases.h"

namespace longrun::bench {

struct OpsOptions {
  std::string backend = "cpu";
  std::vector<std::string> isas = {""};  // "" = the backend's best
  std::vector<int> threads = {1};
  std::vector<int> cpus;      // pin our pool's threads (the peers' threads stay unpinned)
  int spin_us = 0;            // keep our pool's workers spinning (BackendOptions::spin_us)
  bool auto_affinity = true;  // BackendOptions::auto_affinity
  // Session precisions (BackendOptions::precision), run in f32, bf16, int8 order: a case runs
  // at those of them its op uses (CaseSpec::precisions), at f32 alone when it uses none.
  std::vector<Precision> precisions = {Precision::f32};
  CaseSelection cases;
  int repeat = 7;
  int warmup = 2;
  std::string json;  // "" = no JSON, "-" = stdout (the table then goes to stderr)
  bool list = false;
  bool paired = false;  // also the round-by-round ratio to each peer (timing.h, measure_paired)
};

// Runs the benchmark. Returns the process exit code: 0, 1 when a case failed, 2 when the
// backend or ISA cannot be created (a usage error: the message names the flag).
int run_ops(const OpsOptions& options);

}  // namespace longrun::bench
