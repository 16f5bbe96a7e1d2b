// CondvarWaker (pool_baseline.h): a generation counter under a mutex; the thread records the
// time and CPU of each wake-up and publishes them with the generation it saw.
#include "pool_baseline.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace longrun::bench {

int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

using Clock = std::chrono::steady_clock;

struct CondvarWaker::State {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t generation = 0;  // under mu; 0 = none yet
  bool stop = false;        // under mu
  Clock::time_point woke;   // written before `reported` is released
  int woke_cpu = -1;
  std::atomic<uint64_t> reported{0};
  std::thread thread;
};

CondvarWaker::CondvarWaker() : s_(std::make_unique<State>()) {
  State* s = s_.get();
  s->thread = std::thread([s] {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(s->mu);
    for (;;) {
      s->cv.wait(lock, [&] { return s->stop || s->generation != seen; });
      if (s->stop) return;
      seen = s->generation;
      s->woke = Clock::now();
      s->woke_cpu = current_cpu();
      s->reported.store(seen, std::memory_order_release);
    }
  });
}

CondvarWaker::~CondvarWaker() {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->stop = true;
  }
  s_->cv.notify_one();
  s_->thread.join();
}

WakeRound CondvarWaker::round(int busy_us) {
  const int caller_cpu = current_cpu();
  uint64_t gen = 0;
  const Clock::time_point t0 = Clock::now();
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    gen = ++s_->generation;
  }
  s_->cv.notify_one();
  while (std::chrono::duration<double, std::micro>(Clock::now() - t0).count() < busy_us) {
  }
  while (s_->reported.load(std::memory_order_acquire) != gen) std::this_thread::yield();
  WakeRound r;
  r.wake_us = std::chrono::duration<double, std::micro>(s_->woke - t0).count();
  r.stacked = caller_cpu >= 0 && s_->woke_cpu == caller_cpu;
  return r;
}

}  // namespace longrun::bench
