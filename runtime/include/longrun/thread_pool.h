// The thread-pool interface kernels use. Implementations: a serial pool and a oneTBB
// task_arena pool (runtime/src/thread_pool_tbb.cpp), created with make_thread_pool().
//
// Determinism: parallel_for splits [0, n) into chunks that depend only on n, grain and
// num_threads(), never on scheduling, so a kernel that writes each chunk independently
// produces bitwise-identical results for the same thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "longrun/status.h"

namespace longrun {

class ThreadPool {
 public:
  virtual ~ThreadPool() = default;
  virtual int num_threads() const = 0;
  // Calls fn(begin, end) over disjoint chunks covering [0, n), split by the chunking rule
  // below (so chunks hold about max(grain, n / (4 * threads)) items; with grain g the count
  // never exceeds ceil(n / g)). Returns when all chunks are done. fn must not throw.
  virtual void parallel_for(int64_t n, int64_t grain,
                            const std::function<void(int64_t begin, int64_t end)>& fn) = 0;
};

// The chunking rule every pool uses: chunk count = min(ceil(n / grain), 4 * threads), then
// equal split (the first n % chunks chunks get one more item). Exposed for tests.
int64_t thread_pool_chunk_count(int64_t n, int64_t grain, int threads);
void thread_pool_chunk_range(int64_t n, int64_t chunks, int64_t chunk, int64_t* begin, int64_t* end);

// threads <= 1 gives the serial pool; threads == 0 means "all hardware threads".
Result<std::unique_ptr<ThreadPool>> make_thread_pool(int threads);
std::unique_ptr<ThreadPool> make_serial_thread_pool();

}  // namespace longrun
