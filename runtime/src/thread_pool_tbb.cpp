// The oneTBB pool: a task_arena capped at the requested concurrency. parallel_for
// enumerates the chunks of the deterministic rule (thread_pool_chunk_count/range) and hands
// chunk indices to tbb::parallel_for with a simple_partitioner and grain 1, so which items a
// call to fn covers never depends on scheduling, only which worker runs it does.
//
// Affinity: a task_scheduler_observer on the arena pins each thread as it enters (the
// thread in slot i to cpus[i % n]; the caller of parallel_for takes slot 0) and restores its
// previous mask as it leaves, for workers and the calling thread alike. Following the caller
// (thread_pool.h): the caller is pinned to the CPU it entered on, and the worker in slot i
// to the (i - 1)-th of the other CPUs.
#include "thread_pool_tbb.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/task_scheduler_observer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "thread_pool_affinity.h"

namespace longrun::detail {
namespace {

class PinningObserver final : public tbb::task_scheduler_observer {
 public:
  PinningObserver(tbb::task_arena& arena, std::vector<int> cpus, bool follow_caller)
      : tbb::task_scheduler_observer(arena), cpus_(std::move(cpus)), follow_caller_(follow_caller) {}

  // A worker counts as inside from before its pin until after its unpin, so stop() never
  // sees zero while one is pinned. One that enters once stop() has begun is not pinned: stop()
  // may already have seen zero and be about to stop observing, and its exit would then go
  // unnoticed, leaving it pinned for whatever it runs next (seen once in the unit tests'
  // full run). Both sides are sequentially consistent, so of a worker's count and stop()'s
  // flag at least one sees the other.
  void on_scheduler_entry(bool is_worker) override {
    if (is_worker) workers_inside_.fetch_add(1, std::memory_order_seq_cst);
    if (stopping_.load(std::memory_order_seq_cst)) return pin_current_thread(-1);  // its unpin: a no-op
    const int slot = std::max(tbb::this_task_arena::current_thread_index(), 0);
    if (!follow_caller_) return pin_current_thread(cpus_[size_t(slot) % cpus_.size()]);
    if (!is_worker) {
      const int cpu = current_cpu();  // -1: unknown, the caller stays as it is
      caller_cpu_.store(cpu, std::memory_order_relaxed);
      return pin_current_thread(cpu);
    }
    pin_current_thread(other_cpu(caller_cpu_.load(std::memory_order_relaxed), slot - 1));
  }
  void on_scheduler_exit(bool is_worker) override {
    unpin_current_thread();
    if (is_worker) workers_inside_.fetch_sub(1, std::memory_order_acq_rel);
  }

  // Call after the arena is terminated (a worker already on its way may still join; it is
  // then not pinned, above): stops observing once the workers inside have left (they do when
  // there is no work, within microseconds), so none misses its exit notification and stays
  // pinned. Bounded: a worker that has not left after two seconds keeps its pin rather than
  // hang the caller.
  void stop() {
    stopping_.store(true, std::memory_order_seq_cst);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (workers_inside_.load(std::memory_order_seq_cst) > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    observe(false);
  }

 private:
  // The k-th (mod their count) of the CPUs other than `taken` (all of them when `taken` is
  // not one of them, e.g. -1).
  int other_cpu(int taken, int k) const {
    const bool listed = std::find(cpus_.begin(), cpus_.end(), taken) != cpus_.end();
    const int64_t others = int64_t(cpus_.size()) - (listed ? 1 : 0);
    if (others <= 0) return taken;
    int64_t want = std::max(k, 0) % others;
    for (int c : cpus_)
      if (c != taken && want-- == 0) return c;
    return taken;  // not reached
  }

  std::vector<int> cpus_;
  bool follow_caller_;
  std::atomic<int> caller_cpu_{-1};  // the CPU the caller of the latest call entered on
  std::atomic<int> workers_inside_{0};
  std::atomic<bool> stopping_{false};
};

class TbbThreadPool final : public ThreadPool {
 public:
  TbbThreadPool(int threads, std::vector<int> cpus, int spin_us, std::vector<int> follow)
      : threads_(threads),
        spin_(std::chrono::microseconds(spin_us)),
        cpus_(std::move(cpus)),
        follow_(cpus_.empty() ? std::move(follow) : std::vector<int>{}),
        arena_(threads) {
    arena_.initialize();
    if (!cpus_.empty() || !follow_.empty()) {
      observer_ = std::make_unique<PinningObserver>(arena_, cpus_.empty() ? follow_ : cpus_, cpus_.empty());
      observer_->observe(true);
    }
  }
  // noexcept: tbb::task_group's destructor may throw, but only when it was not waited for.
  ~TbbThreadPool() noexcept override {
    if (spin_.count() > 0) {  // release the keepers, and run any that never started
      stopping_.store(true, std::memory_order_relaxed);
      arena_.execute([&] { keepers_.wait(); });
    }
    if (!observer_) return;
    // Terminate first: a worker the market was still sending (demand from the last
    // parallel_for) would otherwise join after stop() saw the arena empty, and keep its pin.
    arena_.terminate();
    observer_->stop();
  }

  int num_threads() const override { return threads_; }
  int spin_us() const override { return threads_ > 1 ? int(spin_.count()) : 0; }
  const std::vector<int>& affinity() const override { return cpus_; }
  const std::vector<int>& follow_cpus() const override { return follow_; }

  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t begin, int64_t end)>& fn) override {
    const int64_t chunks = thread_pool_chunk_count(n, grain, threads_);
    if (chunks <= 0) return;
    auto run_chunk = [&](int64_t c) {
      const BusyScope busy;
      if (c == 0 && spin_.count() > 0) started_.fetch_add(1, std::memory_order_release);  // releases keepers
      int64_t begin = 0, end = 0;
      thread_pool_chunk_range(n, chunks, c, &begin, &end);
      fn(begin, end);
    };
    if (chunks == 1 && cpus_.empty()) {  // nothing to share: skip the arena round trip (and any pinning)
      run_chunk(0);
      return;
    }
    // (A pinned pool always enters the arena: its observer pins the calling thread too.)
    arena_.execute([&] {
      const BusyScope busy;
      tbb::parallel_for(
          tbb::blocked_range<int64_t>(0, chunks, 1),
          [&](const tbb::blocked_range<int64_t>& r) {
            for (int64_t c = r.begin(); c != r.end(); ++c) run_chunk(c);
          },
          tbb::simple_partitioner());
    });
    if (spin_.count() > 0 && !BusyScope::inside()) keep_workers();  // not after a nested call
  }

  // Only a pinning pool needs the arena around fn: its observer pins the caller as it
  // enters and unpins it as it leaves, and the parallel_for calls inside fn, already in the
  // arena, enter no further. Not a BusyScope: between fn's calls the caller is not busy for
  // the pool, so its top-level calls still leave the workers spinning.
  void run_inside(const std::function<void()>& fn) override {
    if (observer_)
      arena_.execute(fn);
    else
      fn();
  }

 private:
  // Spinning (spin_us > 0): one keeper task per worker slot, enqueued into the arena after
  // each call. A worker that takes one stays in the arena busy-waiting until the next call's
  // first chunk starts, or the spin time has passed, or the pool is destroyed. Chunk 0 is the
  // caller's, which tbb::parallel_for runs only after spawning the rest of the range, so the
  // worker returns from its keeper with that call's tasks already there to take. (Returning
  // as soon as the call began, before they were spawned, let the worker leave the arena and
  // fall asleep on every other call.) A keeper taken by a thread that is busy for the pool (a
  // caller waiting inside its call, or a thread between chunks of a nested call) returns at
  // once, and a nested call enqueues none, so no call ever waits on a keeper.
  void keep_workers() {
    const auto until = std::chrono::steady_clock::now() + spin_;
    const uint64_t seen = started_.load(std::memory_order_acquire);
    for (int i = 1; i < threads_; ++i)
      arena_.enqueue(keepers_.defer([this, until, seen] { keep(until, seen); }));
  }
  void keep(std::chrono::steady_clock::time_point until, uint64_t seen) const {
    if (BusyScope::inside()) return;
    for (unsigned i = 0;; ++i) {
      if (started_.load(std::memory_order_acquire) != seen || stopping_.load(std::memory_order_relaxed))
        return;
      if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return;
      cpu_relax();
    }
  }
  // Marks a thread while it calls parallel_for (inside the arena) or runs a chunk.
  class BusyScope {
   public:
    BusyScope() { ++depth(); }
    ~BusyScope() { --depth(); }
    BusyScope(const BusyScope&) = delete;
    BusyScope& operator=(const BusyScope&) = delete;
    static bool inside() { return depth() > 0; }

   private:
    static int& depth() {
      thread_local int d = 0;
      return d;
    }
  };
  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  int threads_;
  std::chrono::microseconds spin_;
  std::atomic<uint64_t> started_{0};  // calls whose chunk 0 has started
  std::atomic<bool> stopping_{false};
  tbb::task_group keepers_;
  std::vector<int> cpus_;
  std::vector<int> follow_;  // follow_cpus()
  tbb::task_arena arena_;
  std::unique_ptr<PinningObserver> observer_;  // set when cpus_ or follow_ is not empty
};

}  // namespace

int tbb_default_concurrency() { return tbb::info::default_concurrency(); }

std::unique_ptr<ThreadPool> make_tbb_thread_pool(int threads, std::vector<int> cpus, int spin_us,
                                                 std::vector<int> follow) {
  return std::make_unique<TbbThreadPool>(threads, std::move(cpus), spin_us, std::move(follow));
}

}  // namespace longrun::detail
