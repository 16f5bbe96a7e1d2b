// Thread-pool affinity: a pool over a 1-CPU and a 2-CPU list runs every chunk on a listed CPU
// with the thread pinned to exactly one of them, leaves the calling thread's mask as it was,
// gives the same chunks as an unpinned pool, hands its oneTBB workers back unpinned, and
// rejects CPUs the process may not use, naming them. A pool without a list as wide as the
// allowed CPUs follows its caller (auto_affinity): the caller pinned to the CPU it is on, the
// workers to the others; narrower or wider pools, or auto_affinity off, pin nothing.
// run_inside pins the caller once for all the parallel_for calls inside it.
#include <doctest/doctest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "longrun/thread_pool.h"

namespace longrun {
namespace {

std::vector<int> thread_mask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

struct ChunkRecord {
  std::pair<int64_t, int64_t> range;
  int cpu;                // sched_getcpu() while running the chunk
  std::vector<int> mask;  // the running thread's affinity mask
  pthread_t thread;
};

// A kernel-like parallel_for: each chunk does a little arithmetic (so several threads take
// part) and records where it ran.
std::vector<ChunkRecord> run_recorded(ThreadPool& pool, int64_t n) {
  std::mutex mu;
  std::vector<ChunkRecord> records;
  std::vector<double> out(static_cast<size_t>(n));
  pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double acc = 0;
      for (int k = 0; k < 20000; ++k) acc += double((i * 31 + k) % 7) * 0.5;
      out[size_t(i)] = acc;
    }
    ChunkRecord r{{b, e}, sched_getcpu(), thread_mask(), pthread_self()};
    std::lock_guard<std::mutex> lock(mu);
    records.push_back(std::move(r));
  });
  std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.range < b.range; });
  return records;
}

// A pool of these options (the test fails if it cannot be made).
std::unique_ptr<ThreadPool> make_pool(int threads, std::vector<int> cpus = {}, bool auto_affinity = true) {
  ThreadPoolOptions options;
  options.threads = threads;
  options.cpus = std::move(cpus);
  options.auto_affinity = auto_affinity;
  auto made = make_thread_pool(options);
  REQUIRE(made.ok());
  return std::move(*made);
}

std::vector<std::pair<int64_t, int64_t>> ranges_of(const std::vector<ChunkRecord>& r) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& x : r) out.push_back(x.range);
  return out;
}

TEST_CASE("thread pool affinity: 1- and 2-CPU lists pin every chunk, restore the caller, same chunks") {
  const std::vector<int> allowed = allowed_cpus();
  REQUIRE_FALSE(allowed.empty());
  CHECK(thread_mask() == allowed);  // the test process starts unpinned (within its mask)
  std::vector<std::vector<int>> lists = {{allowed.back()}};
  if (allowed.size() >= 2)
    lists.push_back({allowed[1], allowed[0]});  // not sorted: order matters
  else
    MESSAGE("only one CPU allowed here: the 2-CPU list is not tested");
  for (const auto& cpus : lists) {
    for (int threads : {0, 1, 2, 3}) {
      CAPTURE(cpu_list_text(cpus));
      CAPTURE(threads);
      const std::unique_ptr<ThreadPool> made = make_pool(threads, cpus);
      ThreadPool& pool = *made;
      CHECK(pool.num_threads() == (threads == 0 ? int(cpus.size()) : threads));
      CHECK(pool.affinity() == cpus);
      const std::vector<int> caller_before = thread_mask();
      for (int64_t n : {1, 2, 64}) {
        const std::vector<ChunkRecord> records = run_recorded(pool, n);
        REQUIRE(records.size() == size_t(thread_pool_chunk_count(n, 1, pool.num_threads())));
        auto unpinned = make_thread_pool(pool.num_threads());
        REQUIRE(unpinned.ok());
        CHECK(ranges_of(records) == ranges_of(run_recorded(**unpinned, n)));  // determinism
        for (const ChunkRecord& r : records) {
          CHECK(std::find(cpus.begin(), cpus.end(), r.cpu) != cpus.end());
          REQUIRE(r.mask.size() == 1);  // pinned to exactly one CPU of the list
          CHECK(std::find(cpus.begin(), cpus.end(), r.mask[0]) != cpus.end());
          // The calling thread runs chunks too (slot 0): pinned to the list's first CPU.
          if (pthread_equal(r.thread, pthread_self())) CHECK(r.mask[0] == cpus[0]);
        }
        CHECK(thread_mask() == caller_before);  // the caller is not left pinned
      }
    }
  }
}

TEST_CASE("thread pool affinity: workers leave a pinned pool unpinned") {
  const std::vector<int> allowed = allowed_cpus();
  {
    run_recorded(*make_pool(2, {allowed[0]}), 64);
  }  // destroyed: its workers have left the arena and got their masks back
  for (const ChunkRecord& r : run_recorded(*make_pool(2, {}, false), 64)) CHECK(r.mask == allowed);
}

TEST_CASE("thread pool affinity: a pool as wide as the allowed CPUs follows its caller") {
  const std::vector<int> allowed = allowed_cpus();
  if (allowed.size() < 2) {
    MESSAGE("only one CPU allowed here: there is no pool to spread");
    return;
  }
  const std::vector<int> caller_before = thread_mask();
  {
    const std::unique_ptr<ThreadPool> made = make_pool(int(allowed.size()));
    ThreadPool& pool = *made;
    CHECK(pool.affinity().empty());
    CHECK(pool.follow_cpus() == allowed);
    for (int call = 0; call < 3; ++call) {
      CAPTURE(call);
      const std::vector<ChunkRecord> records = run_recorded(pool, 64);
      REQUIRE(records.size() == size_t(thread_pool_chunk_count(64, 1, pool.num_threads())));
      int caller_cpu = -1;
      for (const ChunkRecord& r : records) {
        REQUIRE(r.mask.size() == 1);  // every thread pinned to one allowed CPU while it works
        CHECK(std::find(allowed.begin(), allowed.end(), r.mask[0]) != allowed.end());
        if (!pthread_equal(r.thread, pthread_self())) continue;
        if (caller_cpu < 0) caller_cpu = r.mask[0];
        CHECK(r.mask[0] == caller_cpu);  // the caller stays on one CPU for the whole call
      }
      // A fresh pool's workers all join this first call after the caller: none shares its CPU.
      if (call == 0 && caller_cpu >= 0)
        for (const ChunkRecord& r : records)
          if (!pthread_equal(r.thread, pthread_self())) CHECK(r.mask[0] != caller_cpu);
      CHECK(thread_mask() == caller_before);  // the caller is not left pinned
    }
  }
  // A pool of another width, or one with auto_affinity off, pins nothing.
  for (const auto& [threads, auto_affinity] :
       std::vector<std::pair<int, bool>>{{int(allowed.size()) + 1, true}, {int(allowed.size()), false}}) {
    CAPTURE(threads);
    CAPTURE(auto_affinity);
    const std::unique_ptr<ThreadPool> made = make_pool(threads, {}, auto_affinity);
    CHECK(made->follow_cpus().empty());
    for (const ChunkRecord& r : run_recorded(*made, 64)) CHECK(r.mask == allowed);
  }
}

TEST_CASE("thread pool affinity: run_inside pins the caller once for all the calls it makes") {
  const std::vector<int> allowed = allowed_cpus();
  const std::vector<int> caller_before = thread_mask();
  struct PoolCase {
    std::unique_ptr<ThreadPool> pool;
    bool pins_caller;
  };
  std::vector<PoolCase> pools;
  pools.push_back({make_pool(2, {allowed.back()}), true});                           // a CPU list
  if (allowed.size() >= 2) pools.push_back({make_pool(int(allowed.size())), true});  // following
  pools.push_back({make_pool(2, {}, false), false});                                 // never pins
  for (PoolCase& c : pools) {
    CAPTURE(c.pins_caller);
    CAPTURE(cpu_list_text(c.pool->affinity()));
    // The chunks an unpinned pool of the same width makes (a following pool is as wide as the
    // allowed CPUs, which need not be 2).
    const auto unpinned_ranges = ranges_of(run_recorded(*make_pool(c.pool->num_threads(), {}, false), 64));
    int calls = 0;
    c.pool->run_inside([&] {
      const std::vector<int> inside = thread_mask();
      if (!c.pins_caller) {
        CHECK(inside == caller_before);
      } else {
        REQUIRE(inside.size() == 1);  // pinned on entry ...
        if (!c.pool->affinity().empty()) CHECK(inside[0] == c.pool->affinity()[0]);
      }
      for (int call = 0; call < 3; ++call, ++calls) {
        CAPTURE(call);
        const std::vector<ChunkRecord> records = run_recorded(*c.pool, 64);
        REQUIRE(records.size() == size_t(thread_pool_chunk_count(64, 1, c.pool->num_threads())));
        CHECK(ranges_of(records) == unpinned_ranges);
        for (const ChunkRecord& r : records) {
          if (!c.pins_caller) continue;
          REQUIRE(r.mask.size() == 1);
          if (pthread_equal(r.thread, pthread_self())) CHECK(r.mask == inside);  // ... for every call
        }
        CHECK(thread_mask() == inside);  // still pinned between the calls
      }
      c.pool->run_inside([&] { CHECK(thread_mask() == inside); });  // nesting changes nothing
    });
    CHECK(calls == 3);
    CHECK(thread_mask() == caller_before);  // restored when fn returns
  }
}

TEST_CASE("thread pool affinity: CPUs outside the process's set, negative or repeated are refused by name") {
  const std::vector<int> allowed = allowed_cpus();
  int outside = 0;
  while (std::binary_search(allowed.begin(), allowed.end(), outside)) ++outside;
  const std::string allowed_text = cpu_list_text(allowed);
  struct Case {
    std::vector<int> cpus;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{outside},
       "CPU " + std::to_string(outside) + " is not one this process may run on (allowed: " + allowed_text +
           ")"},
      {{allowed[0], outside}, "CPU " + std::to_string(outside) + " is not one"},
      {{-1}, "CPU -1 is not one"},
      {{allowed[0], allowed[0]}, "CPU " + std::to_string(allowed[0]) + " is listed twice"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.expect);
    ThreadPoolOptions options;
    options.threads = 2;
    options.cpus = c.cpus;
    auto made = make_thread_pool(options);
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().code() == StatusCode::invalid_argument);
    CHECK(made.status().message().find(c.expect) != std::string::npos);
  }
  CHECK(cpu_list_text({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8");
  CHECK(cpu_list_text({}) == "none");
}

}  // namespace
}  // namespace longrun
