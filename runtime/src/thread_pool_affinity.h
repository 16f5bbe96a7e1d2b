// Internal: CPU masks for the pinned thread pool (thread_pool_tbb.cpp). Linux
// sched_setaffinity; elsewhere pinning is reported as unsupported.
#pragma once

#include <vector>

#include "longrun/status.h"

namespace longrun::detail {

// invalid_argument unless every id is >= 0, appears once and is in the process's allowed
// CPU set; the message names the CPU and the allowed set.
Status validate_cpu_list(const std::vector<int>& cpus);

// Pins the calling thread to one CPU until the matching unpin_current_thread(), which
// restores the mask it had before. Calls nest (a per-thread stack of saved masks). A
// negative cpu leaves the thread as it is (its unpin then does nothing).
void pin_current_thread(int cpu);
void unpin_current_thread();
// The CPU the calling thread is running on (sched_getcpu), or -1 where unknown.
int current_cpu();

}  // namespace longrun::detail
