// `longrun-bench pool`: how soon a thread pool's workers take part in a parallel_for after
// the pool has been idle for a while (the wake-up cost every short op pays when a session
// runs sporadically).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace longrun::bench {

struct PoolOptions {
  int threads = 2;
  std::vector<int> cpus;  // pin the pool's threads to these CPUs (ThreadPoolOptions::cpus)
  std::vector<int64_t> gaps_us = {0, 100, 1000, 5000};  // idle time before each call
  int rounds = 101;                                     // calls per gap, medians reported
  int chunk_us = 50;                                    // busy time of each of 4 x threads chunks
  int spin_us = 0;                                      // ThreadPoolOptions::spin_us
  bool auto_affinity = true;                            // ThreadPoolOptions::auto_affinity
  bool baseline = false;                                // also a plain condition-variable wake-up
  std::string json;                                     // "" = none, "-" = stdout
};

// Runs the measurement; returns the exit code (0, or 2 when the pool or --json cannot be
// made).
int run_pool(const PoolOptions& options);

}  // namespace longrun::bench
