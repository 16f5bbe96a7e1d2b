// `longrun-bench pool` (pool_command.h). Each round sleeps for the gap, then calls
// parallel_for over 4 x threads chunks of `chunk_us` busy time each and records, per chunk,
// which thread ran it and when it started; a thread's join latency is the start of its first
// chunk after the call, and a call is stacked when another thread ran a chunk on a CPU that
// the caller ran one on. Busy-waiting chunks (not real work) keep the numbers independent of
// caches and frequency. --baseline adds a plain condition-variable wake-up after the same
// gaps (pool_baseline.h).
#include "pool_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "longrun/thread_pool.h"
#include "pool_baseline.h"
#include "provenance.h"
#include "report.h"
#include "timing.h"

namespace longrun::bench {
namespace {

using Clock = std::chrono::steady_clock;

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

struct Round {
  double wall_us = 0;
  int threads_used = 0;
  double last_join_us = -1;  // the last thread to join; -1 when not every thread ran a chunk
  bool stacked = false;      // another thread ran a chunk on a CPU the caller ran one on
};

Round one_round(ThreadPool& pool, int64_t chunks, int chunk_us) {
  struct Start {
    std::thread::id who;
    Clock::time_point when;
    int cpu = -1;
  };
  std::vector<Start> starts(static_cast<size_t>(chunks));
  const std::thread::id caller = std::this_thread::get_id();
  const Clock::time_point t0 = Clock::now();
  pool.parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const Clock::time_point s = Clock::now();
      starts[size_t(c)] = {std::this_thread::get_id(), s, current_cpu()};
      while (us_between(s, Clock::now()) < chunk_us) {
      }
    }
  });
  Round r;
  r.wall_us = us_between(t0, Clock::now());
  std::vector<std::pair<std::thread::id, Clock::time_point>> first;  // per thread, its first start
  for (const Start& s : starts) {
    auto it = std::find_if(first.begin(), first.end(), [&](const auto& f) { return f.first == s.who; });
    if (it == first.end())
      first.emplace_back(s.who, s.when);
    else
      it->second = std::min(it->second, s.when);
  }
  r.threads_used = int(first.size());
  std::vector<int> caller_cpus;  // the CPUs the caller ran chunks on (a few at most)
  for (const Start& s : starts)
    if (s.who == caller && s.cpu >= 0 &&
        std::find(caller_cpus.begin(), caller_cpus.end(), s.cpu) == caller_cpus.end())
      caller_cpus.push_back(s.cpu);
  for (const Start& s : starts)
    r.stacked |=
        s.who != caller && std::find(caller_cpus.begin(), caller_cpus.end(), s.cpu) != caller_cpus.end();
  if (r.threads_used == pool.num_threads()) {
    r.last_join_us = 0;
    for (const auto& f : first) r.last_join_us = std::max(r.last_join_us, us_between(t0, f.second));
  }
  return r;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1) + 0.5)];
}

std::string rounded_us(double us) { return us < 0 ? "-" : std::to_string(int(us + 0.5)); }
std::string json_us(double us) { return us < 0 ? "null" : json_number(us); }

// --baseline: `rounds` wake-ups of a plain thread, each after sleeping `gap` us, the caller
// busy for `busy_us` meanwhile.
struct Baseline {
  double p50 = -1, p90 = -1;
  int stacked = 0;
};
Baseline baseline_rounds(CondvarWaker& waker, int64_t gap, int rounds, int busy_us) {
  std::vector<double> wake;
  Baseline b;
  waker.round(busy_us);  // warm-up, as for the pool
  for (int i = 0; i < rounds; ++i) {
    if (gap > 0) std::this_thread::sleep_for(std::chrono::microseconds(gap));
    const WakeRound w = waker.round(busy_us);
    wake.push_back(w.wake_us);
    b.stacked += w.stacked ? 1 : 0;
  }
  b.p50 = percentile(wake, 0.5);
  b.p90 = percentile(wake, 0.9);
  return b;
}

}  // namespace

int run_pool(const PoolOptions& o) {
  ThreadPoolOptions po;
  po.threads = o.threads;
  po.cpus = o.cpus;
  po.spin_us = o.spin_us;
  po.auto_affinity = o.auto_affinity;
  Result<std::unique_ptr<ThreadPool>> made = make_thread_pool(po);
  if (!made.ok()) {
    std::fprintf(stderr, "longrun-bench: %s: %s\n", o.cpus.empty() ? "--threads" : "--threads / --cpus",
                 made.status().to_string().c_str());
    return 2;
  }
  ThreadPool& pool = **made;
  JsonSink json;
  if (!open_json(o.json, &json)) return 2;
  std::FILE* table = json.table();
  const int threads = pool.num_threads();
  const int64_t chunks = 4 * int64_t(threads);
  const double ideal_ms = double(chunks) * o.chunk_us / threads / 1000.0;
  std::fprintf(
      table,
      "longrun-bench pool: %d thread%s%s%s%s, %lld chunks of %d us busy time per call, %d calls per "
      "idle gap (medians); join = when the last thread started its first chunk\n",
      threads, threads == 1 ? "" : "s",
      o.cpus.empty() ? "" : (" pinned to CPUs " + cpu_list_text(o.cpus)).c_str(),
      pool.follow_cpus().empty()
          ? ""
          : (" following the caller on CPUs " + cpu_list_text(pool.follow_cpus())).c_str(),
      pool.spin_us() == 0 ? "" : (", workers spin " + std::to_string(pool.spin_us()) + " us").c_str(),
      static_cast<long long>(chunks), o.chunk_us, o.rounds);
  std::fprintf(table, "%8s %10s %9s %8s %10s %10s %7s %7s%s\n", "gap us", "median ms", "ideal ms", "threads",
               "join p50us", "join p90us", "missed", "stacked",
               o.baseline ? "   cv p50us  cv p90us cv stacked" : "");
  std::unique_ptr<CondvarWaker> waker = o.baseline ? std::make_unique<CondvarWaker>() : nullptr;
  const int busy_us = int(ideal_ms * 1000.0);
  for (const int64_t gap : o.gaps_us) {
    std::vector<double> wall, used, join;
    int missed = 0, stacked = 0;
    one_round(pool, chunks, o.chunk_us);  // warm-up: the workers exist and have run once
    for (int i = 0; i < o.rounds; ++i) {
      if (gap > 0) std::this_thread::sleep_for(std::chrono::microseconds(gap));
      const Round r = one_round(pool, chunks, o.chunk_us);
      wall.push_back(r.wall_us / 1000.0);
      used.push_back(r.threads_used);
      stacked += r.stacked ? 1 : 0;
      if (r.last_join_us >= 0)
        join.push_back(r.last_join_us);
      else
        ++missed;
    }
    const double med = median(wall), threads_used = median(used);
    const double p50 = percentile(join, 0.5), p90 = percentile(join, 0.9);
    const Baseline b = waker ? baseline_rounds(*waker, gap, o.rounds, busy_us) : Baseline{};
    std::string cv;
    if (waker) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %11s %9s %6d/%d", rounded_us(b.p50).c_str(), rounded_us(b.p90).c_str(),
                    b.stacked, o.rounds);
      cv = buf;
    }
    std::fprintf(table, "%8lld %10.3f %9.3f %8.1f %10s %10s %4d/%d %4d/%d%s\n", static_cast<long long>(gap),
                 med, ideal_ms, threads_used, rounded_us(p50).c_str(), rounded_us(p90).c_str(), missed,
                 o.rounds, stacked, o.rounds, cv.c_str());
    if (json.file) {
      std::string extra;
      if (waker)
        extra = ",\"cv_wake_p50_us\":" + json_us(b.p50) + ",\"cv_wake_p90_us\":" + json_us(b.p90) +
                ",\"cv_stacked\":" + std::to_string(b.stacked);
      std::fprintf(json.file,
                   "{\"gap_us\":%lld,\"threads\":%d,\"chunks\":%lld,\"chunk_us\":%d,\"rounds\":%d,"
                   "\"median_ms\":%s,\"ideal_ms\":%s,\"threads_used\":%s,\"join_p50_us\":%s,"
                   "\"join_p90_us\":%s,\"missed\":%d,\"stacked\":%d%s%s}\n",
                   static_cast<long long>(gap), threads, static_cast<long long>(chunks), o.chunk_us, o.rounds,
                   json_number(med).c_str(), json_number(ideal_ms).c_str(), json_number(threads_used).c_str(),
                   json_us(p50).c_str(), json_us(p90).c_str(), missed, stacked, extra.c_str(),
                   json_provenance_fields().c_str());
    }
    std::fflush(table);
  }
  return 0;
}

}  // namespace longrun::bench
