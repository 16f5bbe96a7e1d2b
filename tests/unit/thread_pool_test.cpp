// Thread pools: the deterministic chunking rule, exactly-once coverage on the serial and
// oneTBB pools, chunk boundaries independent of scheduling, and argument checks.
#include "longrun/thread_pool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace longrun {
namespace {

using Chunks = std::vector<std::pair<int64_t, int64_t>>;

// The chunks the rule prescribes, enumerated independently of any pool.
Chunks expected_chunks(int64_t n, int64_t grain, int threads) {
  Chunks c;
  const int64_t count = thread_pool_chunk_count(n, grain, threads);
  for (int64_t i = 0; i < count; ++i) {
    int64_t b = 0, e = 0;
    thread_pool_chunk_range(n, count, i, &b, &e);
    c.emplace_back(b, e);
  }
  return c;
}

// Runs parallel_for and returns the (begin, end) calls it made, sorted, after checking that
// every index in [0, n) was visited exactly once.
Chunks run_and_record(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(size_t(std::max<int64_t>(n, 0)));
  std::mutex mu;
  Chunks calls;
  pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mu);
    calls.emplace_back(b, e);
  });
  int wrong = 0;
  for (auto& h : hits) wrong += h.load() != 1;
  CHECK_MESSAGE(wrong == 0, "n=", n, " grain=", grain, " threads=", pool.num_threads());
  std::sort(calls.begin(), calls.end());
  return calls;
}

TEST_CASE("thread pool: the chunk rule covers [0, n) exactly once in equal chunks") {
  for (int64_t n : {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 63, 64, 65, 100, 127, 1000, 4099, 1000003}) {
    for (int64_t grain : {1, 2, 3, 7, 16, 64, 1000, 5000000}) {
      for (int threads : {1, 2, 3, 4, 7, 8, 16, 64, 1024}) {
        CAPTURE(n);
        CAPTURE(grain);
        CAPTURE(threads);
        const int64_t count = thread_pool_chunk_count(n, grain, threads);
        const int64_t want = n == 0 ? 0 : std::min<int64_t>((n + grain - 1) / grain, 4 * int64_t(threads));
        REQUIRE(count == want);
        int64_t next = 0, lo = n, hi = 0;
        for (int64_t c = 0; c < count; ++c) {
          int64_t b = -1, e = -1;
          thread_pool_chunk_range(n, count, c, &b, &e);
          REQUIRE(b == next);               // contiguous, in order, no gaps or overlaps
          REQUIRE(e > b);                   // never empty
          if (c > 0) REQUIRE(e - b <= hi);  // the larger chunks come first
          lo = std::min(lo, e - b);
          hi = std::max(hi, e - b);
          next = e;
        }
        CHECK(next == n);
        if (count > 0) CHECK(hi - lo <= 1);
      }
    }
  }
  // Chunk count grows with the thread count until the grain limits it.
  CHECK(thread_pool_chunk_count(1 << 20, 1, 4) == 16);
  CHECK(thread_pool_chunk_count(100, 10, 64) == 10);
  CHECK(thread_pool_chunk_count(-5, 1, 4) == 0);
  // Extreme sizes do not overflow.
  const int64_t big = INT64_MAX;
  CHECK(thread_pool_chunk_count(big, 1, 1024) == 4096);
  int64_t b = 0, e = 0;
  thread_pool_chunk_range(big, 4096, 4095, &b, &e);
  CHECK(e == big);
}

TEST_CASE("thread pool: serial and oneTBB pools visit every index once, deterministically") {
  for (int threads : {1, 2, 4}) {
    CAPTURE(threads);
    Result<std::unique_ptr<ThreadPool>> made = make_thread_pool(threads);
    REQUIRE(made.ok());
    ThreadPool& pool = **made;
    CHECK(pool.num_threads() == threads);
    for (int64_t n : {0, 1, 3, 64, 1000, 100003}) {
      for (int64_t grain : {1, 5, 64, 4096}) {
        CAPTURE(n);
        CAPTURE(grain);
        const Chunks want = expected_chunks(n, grain, threads);
        CHECK(run_and_record(pool, n, grain) == want);
        CHECK(run_and_record(pool, n, grain) == want);  // same boundaries on a second run
      }
    }
  }
  std::unique_ptr<ThreadPool> serial = make_serial_thread_pool();
  CHECK(serial->num_threads() == 1);
  // The serial pool runs the chunks in order on the calling thread.
  Chunks order;
  serial->parallel_for(10, 1, [&](int64_t b, int64_t e) { order.emplace_back(b, e); });
  CHECK(order == expected_chunks(10, 1, 1));
}

TEST_CASE("thread pool: nested parallel_for and all-hardware-threads pool") {
  Result<std::unique_ptr<ThreadPool>> made = make_thread_pool(0);
  REQUIRE(made.ok());
  ThreadPool& pool = **made;
  CHECK(pool.num_threads() >= 1);
  std::vector<std::atomic<int>> hits(64 * 64);
  pool.parallel_for(64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pool.parallel_for(64, 1, [&](int64_t b2, int64_t e2) {
        for (int64_t j = b2; j < e2; ++j) hits[size_t(i * 64 + j)].fetch_add(1);
      });
    }
  });
  CHECK(std::all_of(hits.begin(), hits.end(), [](const std::atomic<int>& h) { return h.load() == 1; }));
}

// Spinning workers (ThreadPoolOptions::spin_us) change who runs a chunk, never which chunks
// a call makes; nested calls (whose callers pick up keeper tasks while they wait) finish;
// destroying the pool releases workers still spinning instead of waiting out the spin time.
TEST_CASE("thread pool: spinning workers keep the chunks, nest, and let the pool go at once") {
  for (int threads : {1, 2, 4}) {
    for (int spin_us : {50, kMaxSpinUs}) {
      CAPTURE(threads);
      CAPTURE(spin_us);
      ThreadPoolOptions options;
      options.threads = threads;
      options.spin_us = spin_us;
      Result<std::unique_ptr<ThreadPool>> made = make_thread_pool(options);
      REQUIRE(made.ok());
      ThreadPool& pool = **made;
      CHECK(pool.spin_us() == (threads > 1 ? spin_us : 0));
      for (int64_t n : {1, 7, 1000, 100003})
        for (int64_t grain : {1, 64}) {
          CAPTURE(n);
          CAPTURE(grain);
          CHECK(run_and_record(pool, n, grain) == expected_chunks(n, grain, threads));
        }
      std::vector<std::atomic<int>> hits(32 * 32);
      pool.parallel_for(32, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          pool.parallel_for(32, 1, [&](int64_t b2, int64_t e2) {
            for (int64_t j = b2; j < e2; ++j) hits[size_t(i * 32 + j)].fetch_add(1);
          });
      });
      CHECK(std::all_of(hits.begin(), hits.end(), [](const std::atomic<int>& h) { return h.load() == 1; }));
      // The workers are now spinning for up to a second; the pool must not wait for that.
      const auto t0 = std::chrono::steady_clock::now();
      made->reset();
      CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500));
    }
  }
}

TEST_CASE("thread pool: invalid thread counts are rejected") {
  for (int bad : {-1, -1000, 1025, 1 << 30}) {
    CAPTURE(bad);
    Result<std::unique_ptr<ThreadPool>> made = make_thread_pool(bad);
    CHECK(made.status().code() == StatusCode::invalid_argument);
  }
  for (int bad : {-1, kMaxSpinUs + 1}) {
    CAPTURE(bad);
    ThreadPoolOptions options;
    options.threads = 2;
    options.spin_us = bad;
    Result<std::unique_ptr<ThreadPool>> made = make_thread_pool(options);
    CHECK(made.status().code() == StatusCode::invalid_argument);
    CHECK(made.status().message().find("spin time must be in [0, 1000000] microseconds, got " +
                                       std::to_string(bad)) != std::string::npos);
  }
}

}  // namespace
}  // namespace longrun
