// The deterministic chunking rule, the serial pool and the pool factory (thread_pool.h).
#include "longrun/thread_pool.h"

#include <algorithm>
#include <string>

#include "thread_pool_affinity.h"
#include "thread_pool_tbb.h"

namespace longrun {
namespace {

constexpr int kMaxThreads = 1024;

// Runs the chunks in order on the calling thread. It uses the same chunk boundaries as a
// one-thread pool would, so a kernel sees identical (begin, end) calls either way.
class SerialThreadPool final : public ThreadPool {
 public:
  int num_threads() const override { return 1; }
  const std::vector<int>& affinity() const override { return no_cpus_; }
  void parallel_for(int64_t n, int64_t grain,
                    const std::function<void(int64_t begin, int64_t end)>& fn) override {
    const int64_t chunks = thread_pool_chunk_count(n, grain, 1);
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t begin = 0, end = 0;
      thread_pool_chunk_range(n, chunks, c, &begin, &end);
      fn(begin, end);
    }
  }

 private:
  std::vector<int> no_cpus_;
};

}  // namespace

int64_t thread_pool_chunk_count(int64_t n, int64_t grain, int threads) {
  if (n <= 0) return 0;
  grain = std::max<int64_t>(grain, 1);
  const int64_t by_grain = (n - 1) / grain + 1;  // ceil(n / grain) without overflow
  const int64_t by_threads = 4 * int64_t(std::max(threads, 1));
  return std::min(by_grain, by_threads);
}

void thread_pool_chunk_range(int64_t n, int64_t chunks, int64_t chunk, int64_t* begin, int64_t* end) {
  if (n <= 0 || chunks <= 0 || chunk < 0 || chunk >= chunks) {
    *begin = *end = std::max<int64_t>(n, 0);
    return;
  }
  // Equal split; the first n % chunks chunks take one extra item.
  const int64_t base = n / chunks, extra = n % chunks;
  *begin = chunk * base + std::min(chunk, extra);
  *end = *begin + base + (chunk < extra ? 1 : 0);
}

std::unique_ptr<ThreadPool> make_serial_thread_pool() { return std::make_unique<SerialThreadPool>(); }

Result<std::unique_ptr<ThreadPool>> make_thread_pool(const ThreadPoolOptions& options) {
  int threads = options.threads;
  if (threads < 0 || threads > kMaxThreads)
    return invalid_argument("thread pool: thread count must be in [0, " + std::to_string(kMaxThreads) +
                            "] (0 = all hardware threads), got " + std::to_string(threads));
  if (options.spin_us < 0 || options.spin_us > kMaxSpinUs)
    return invalid_argument("thread pool: spin time must be in [0, " + std::to_string(kMaxSpinUs) +
                            "] microseconds, got " + std::to_string(options.spin_us));
  if (options.cpus.empty()) {
    if (threads == 0) threads = std::clamp(detail::tbb_default_concurrency(), 1, kMaxThreads);
    if (threads <= 1) return make_serial_thread_pool();
    std::vector<int> follow;  // "Following the caller" (thread_pool.h)
    if (options.auto_affinity) {
      std::vector<int> allowed = allowed_cpus();
      if (int64_t(allowed.size()) == threads) follow = std::move(allowed);
    }
    return detail::make_tbb_thread_pool(threads, {}, options.spin_us, std::move(follow));
  }
  LR_RETURN_IF_ERROR(detail::validate_cpu_list(options.cpus));
  if (threads == 0) threads = std::min<int>(int(options.cpus.size()), kMaxThreads);
  // Even one thread goes through the arena: its observer pins (and unpins) the caller.
  return detail::make_tbb_thread_pool(threads, options.cpus, options.spin_us);
}

Result<std::unique_ptr<ThreadPool>> make_thread_pool(int threads) {
  ThreadPoolOptions options;
  options.threads = threads;
  return make_thread_pool(options);
}

}  // namespace longrun
