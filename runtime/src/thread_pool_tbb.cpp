// The oneTBB pool: a task_arena capped at the requested concurrency. parallel_for
// enumerates the chunks of the deterministic rule (thread_pool_chunk_count/range) and hands
// chunk indices to tbb::parallel_for with a simple_partitioner and grain 1, so which items a
// call to fn covers never depends on scheduling, only which worker runs it does.
#include "thread_pool_tbb.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

namespace longrun::detail {
namespace {

class TbbThreadPool final : public ThreadPool {
 public:
  explicit TbbThreadPool(int threads) : threads_(threads), arena_(threads) { arena_.initialize(); }

  int num_threads() const override { return threads_; }

  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t begin, int64_t end)>& fn) override {
    const int64_t chunks = thread_pool_chunk_count(n, grain, threads_);
    if (chunks <= 0) return;
    auto run_chunk = [&](int64_t c) {
      int64_t begin = 0, end = 0;
      thread_pool_chunk_range(n, chunks, c, &begin, &end);
      fn(begin, end);
    };
    if (chunks == 1) {  // nothing to share: skip the arena round trip
      run_chunk(0);
      return;
    }
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
  tbb::task_arena arena_;
};

}  // namespace

int tbb_default_concurrency() { return tbb::info::default_concurrency(); }

std::unique_ptr<ThreadPool> make_tbb_thread_pool(int threads) {
  return std::make_unique<TbbThreadPool>(threads);
}

}  // namespace longrun::detail
