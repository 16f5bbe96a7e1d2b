// Internal: the oneTBB-backed pool (thread_pool_tbb.cpp), used by make_thread_pool().
#pragma once

#include <memory>

#include "longrun/thread_pool.h"

namespace longrun::detail {

// Hardware threads as oneTBB sees them (respects affinity masks and cgroup limits).
int tbb_default_concurrency();
// A pool over a tbb::task_arena with `threads` (>= 2) maximum concurrency.
std::unique_ptr<ThreadPool> make_tbb_thread_pool(int threads);

}  // namespace longrun::detail
