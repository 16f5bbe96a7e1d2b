// The oneTBB pool: a task_arena capped at the requested concurrency. parallel_for
// enumerates the chunks of the deterministic rule (thread_pool_chunk_count/range) and hands
// chunk indices to tbb::parallel_for with a simple_partitioner and grain 1, so which items a
// call to fn covers never depends on scheduling, only which worker runs it does.
//
// Affinity: a task_scheduler_observer on the arena pins each thread as it enters (the
// thread in slot i to cpus[i % n]; the caller of parallel_for takes slot 0) and restores its
// previous mask as it leaves, for workers and the calling thread alike.
#include "thread_pool_tbb.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_scheduler_observer.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "thread_pool_affinity.h"

namespace longrun::detail {
namespace {

class PinningObserver final : public tbb::task_scheduler_observer {
 public:
  PinningObserver(tbb::task_arena& arena, std::vector<int> cpus)
      : tbb::task_scheduler_observer(arena), cpus_(std::move(cpus)) {}

  // A worker counts as inside from before its pin until after its unpin, so stop() never
  // sees zero while one is pinned.
  void on_scheduler_entry(bool is_worker) override {
    if (is_worker) workers_inside_.fetch_add(1, std::memory_order_acq_rel);
    const int slot = tbb::this_task_arena::current_thread_index();
    pin_current_thread(cpus_[size_t(slot < 0 ? 0 : slot) % cpus_.size()]);
  }
  void on_scheduler_exit(bool is_worker) override {
    unpin_current_thread();
    if (is_worker) workers_inside_.fetch_sub(1, std::memory_order_acq_rel);
  }

  // Call after the arena is terminated (no worker joins any more): stops observing once the
  // workers inside have left (they do when there is no work, within microseconds), so none
  // misses its exit notification and stays pinned. Bounded: a worker that has not left after
  // two seconds keeps its pin rather than hang the caller.
  void stop() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (workers_inside_.load(std::memory_order_acquire) > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    observe(false);
  }

 private:
  std::vector<int> cpus_;
  std::atomic<int> workers_inside_{0};
};

class TbbThreadPool final : public ThreadPool {
 public:
  TbbThreadPool(int threads, std::vector<int> cpus)
      : threads_(threads), cpus_(std::move(cpus)), arena_(threads) {
    arena_.initialize();
    if (!cpus_.empty()) {
      observer_ = std::make_unique<PinningObserver>(arena_, cpus_);
      observer_->observe(true);
    }
  }
  ~TbbThreadPool() override {
    if (!observer_) return;
    // Terminate first: a worker the market was still sending (demand from the last
    // parallel_for) would otherwise join after stop() saw the arena empty, and keep its pin.
    arena_.terminate();
    observer_->stop();
  }

  int num_threads() const override { return threads_; }
  const std::vector<int>& affinity() const override { return cpus_; }

  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t begin, int64_t end)>& fn) override {
    const int64_t chunks = thread_pool_chunk_count(n, grain, threads_);
    if (chunks <= 0) return;
    auto run_chunk = [&](int64_t c) {
      int64_t begin = 0, end = 0;
      thread_pool_chunk_range(n, chunks, c, &begin, &end);
      fn(begin, end);
    };
    if (chunks == 1 && cpus_.empty()) {  // nothing to share: skip the arena round trip
      run_chunk(0);
      return;
    }
    // (A pinned pool always enters the arena: its observer pins the calling thread too.)
    arena_.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<int64_t>(0, chunks, 1),
          [&](const tbb::blocked_range<int64_t>& r) {
            for (int64_t c = r.begin(); c != r.end(); ++c) run_chunk(c);
          },
          tbb::simple_partitioner());
    });
  }

 private:
  int threads_;
  std::vector<int> cpus_;
  tbb::task_arena arena_;
  std::unique_ptr<PinningObserver> observer_;  // set when cpus_ is not empty
};

}  // namespace

int tbb_default_concurrency() { return tbb::info::default_concurrency(); }

std::unique_ptr<ThreadPool> make_tbb_thread_pool(int threads, std::vector<int> cpus) {
  return std::make_unique<TbbThreadPool>(threads, std::move(cpus));
}

}  // namespace longrun::detail
