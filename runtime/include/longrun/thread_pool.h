// The thread-pool interface kernels use. Implementations: a serial pool and a oneTBB
// task_arena pool (runtime/src/thread_pool_tbb.cpp), created with make_thread_pool().
//
// Determinism: parallel_for splits [0, n) into chunks that depend only on n, grain and
// num_threads(), never on scheduling, so a kernel that writes each chunk independently
// produces bitwise-identical results for the same thread count (with or without affinity).
//
// Affinity: a pool made with a CPU list pins every thread while it works for the pool: the
// thread in arena slot i (the calling thread is slot 0, workers 1..threads-1) runs on
// cpus[i % cpus.size()] only. Pinning is scoped: a thread's previous CPU mask is restored
// when it leaves the pool's arena, so the caller of parallel_for is not left pinned and a
// oneTBB worker that later serves another (unpinned) pool runs where it did before.
//
// Following the caller (ThreadPoolOptions::auto_affinity, on by default): a pool without a
// CPU list whose thread count equals the number of CPUs this process may use pins each
// call's threads the same scoped way, the calling thread to the CPU it is running on and
// the workers to the other allowed CPUs, one each. Unpinned, a woken worker was measured
// landing on the caller's own vCPU in nearly every call (longrun-bench pool --baseline; the
// guest scheduler then takes milliseconds to separate them), so a two-thread call of a short
// kernel ran slower than one thread. The caller is never moved: it keeps the CPU it was on.
//
// Spinning (ThreadPoolOptions::spin_us): by default an idle pool's workers go back to
// oneTBB, which soon lets them sleep, and a call that comes a little later starts on the
// caller alone while the workers wake up: tens of microseconds to milliseconds on a VM, more
// than a short kernel takes. With spin_us > 0 the workers busy-wait inside the pool for that
// long after each call, so the next call within the window starts on every thread at once
// (the way OpenMP runtimes spin by default). Which chunks a call makes never depends on it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "longrun/status.h"

namespace longrun {

class ThreadPool {
 public:
  virtual ~ThreadPool() = default;
  virtual int num_threads() const = 0;
  // The CPUs the pool's threads are pinned to (empty: not pinned to a list).
  virtual const std::vector<int>& affinity() const = 0;
  // The CPUs a pool that follows its caller spreads each call's threads over (empty: it
  // does not; see "Following the caller" above).
  virtual const std::vector<int>& follow_cpus() const {
    static const std::vector<int> none;
    return none;
  }
  // How long the workers busy-wait after each call, in microseconds (0: they may sleep).
  virtual int spin_us() const { return 0; }
  // Calls fn(begin, end) over disjoint chunks covering [0, n), split by the chunking rule
  // below (so chunks hold about max(grain, n / (4 * threads)) items; with grain g the count
  // never exceeds ceil(n / g)). Returns when all chunks are done. fn must not throw.
  virtual void parallel_for(int64_t n, int64_t grain,
                            const std::function<void(int64_t begin, int64_t end)>& fn) = 0;
  // Runs fn on the calling thread, with the thread counted inside the pool for all of it:
  // a pool that pins (a CPU list, or following the caller) pins the caller once here,
  // instead of once in every parallel_for that fn makes, and restores its mask when fn
  // returns. For a run of many short parallel sections (a session run). The pool's own
  // parallel_for calls inside fn behave exactly as outside (same chunks, same workers).
  // Pools that never pin just call fn.
  virtual void run_inside(const std::function<void()>& fn) { fn(); }
};

// The chunking rule every pool uses: chunk count = min(ceil(n / grain), 4 * threads), then
// equal split (the first n % chunks chunks get one more item). Exposed for tests.
int64_t thread_pool_chunk_count(int64_t n, int64_t grain, int threads);
void thread_pool_chunk_range(int64_t n, int64_t chunks, int64_t chunk, int64_t* begin, int64_t* end);

inline constexpr int kMaxSpinUs = 1000000;  // ThreadPoolOptions::spin_us, SessionOptions::spin_us

struct ThreadPoolOptions {
  // 1 (serial) .. 1024; 0 = all hardware threads, or cpus.size() when cpus is given.
  int threads = 1;
  // CPU ids to pin to (empty: no list; auto_affinity decides). Each must be in the process's
  // allowed CPU set (sched_getaffinity) and appear once; more threads than CPUs share them
  // round-robin.
  std::vector<int> cpus;
  // After each parallel_for, keep the pool's workers busy-waiting in the pool for this many
  // microseconds (0 .. 1000000; default 0: they go back to oneTBB, which lets them sleep).
  // Costs up to threads - 1 CPUs spinning for that long after every call. No effect on a
  // one-thread pool.
  int spin_us = 0;
  // Without `cpus`: when the thread count equals the number of CPUs this process may use,
  // pin each call's threads, the caller to its current CPU and the workers to the others
  // (see "Following the caller" above). false: never pin without a list.
  bool auto_affinity = true;
};

// threads <= 1 (and no CPU list) gives the serial pool; threads == 0 means "all hardware
// threads". Errors: invalid_argument naming the bad thread count or CPU (with the CPUs this
// process may use); unsupported where the platform cannot pin threads.
Result<std::unique_ptr<ThreadPool>> make_thread_pool(const ThreadPoolOptions& options);
Result<std::unique_ptr<ThreadPool>> make_thread_pool(int threads);
std::unique_ptr<ThreadPool> make_serial_thread_pool();

// The CPUs this process may run on (sched_getaffinity), ascending; "0-3,8" style text of a
// list for messages.
std::vector<int> allowed_cpus();
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace longrun
