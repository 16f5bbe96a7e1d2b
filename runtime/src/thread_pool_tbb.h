// Internal: the oneTBB-backed pool (thread_pool_tbb.cpp), used by make_thread_pool().
#pragma once

#include <memory>
#include <vector>

#include "longrun/thread_pool.h"

namespace longrun::detail {

// Hardware threads as oneTBB sees them (respects affinity masks and cgroup limits).
int tbb_default_concurrency();
// A pool over a tbb::task_arena with `threads` maximum concurrency (>= 2, or >= 1 with
// cpus), its threads pinned to `cpus` (validated by the caller) when that is not empty,
// its workers kept spinning for spin_us after each call (ThreadPoolOptions::spin_us). Without
// cpus, a non-empty `follow` (the allowed CPUs, as many as threads) makes each call pin its
// caller to the CPU it is on and the workers to the others (thread_pool.h).
std::unique_ptr<ThreadPool> make_tbb_thread_pool(int threads, std::vector<int> cpus = {}, int spin_us = 0,
                                                 std::vector<int> follow = {});

}  // namespace longrun::detail
