// `longrun-bench pool` (pool_command.h). Each round sleeps for the gap, then calls
// parallel_for over 4 x threads chunks of `chunk_us` busy time each and records, per chunk,
// which thread ran it and when it started; a thread's join latency is the start of its first
// chunk after the call. Busy-waiting chunks (not real work) keep the numbers independent of
// caches and frequency.
#include "pool_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "longrun/thread_pool.h"
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
};

Round one_round(ThreadPool& pool, int64_t chunks, int chunk_us) {
  struct Start {
    std::thread::id who;
    Clock::time_point when;
  };
  std::vector<Start> starts(static_cast<size_t>(chunks));
  const Clock::time_point t0 = Clock::now();
  pool.parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const Clock::time_point s = Clock::now();
      starts[size_t(c)] = {std::this_thread::get_id(), s};
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

}  // namespace

int run_pool(const PoolOptions& o) {
  ThreadPoolOptions po;
  po.threads = o.threads;
  po.cpus = o.cpus;
  po.spin_us = o.spin_us;
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
      "longrun-bench pool: %d thread%s%s%s, %lld chunks of %d us busy time per call, %d calls per "
      "idle gap (medians); join = when the last thread started its first chunk\n",
      threads, threads == 1 ? "" : "s",
      o.cpus.empty() ? "" : (" pinned to CPUs " + cpu_list_text(o.cpus)).c_str(),
      pool.spin_us() == 0 ? "" : (", workers spin " + std::to_string(pool.spin_us()) + " us").c_str(),
      static_cast<long long>(chunks), o.chunk_us, o.rounds);
  std::fprintf(table, "%8s %10s %9s %8s %10s %10s %7s\n", "gap us", "median ms", "ideal ms", "threads",
               "join p50us", "join p90us", "missed");
  for (const int64_t gap : o.gaps_us) {
    std::vector<double> wall, used, join;
    int missed = 0;
    one_round(pool, chunks, o.chunk_us);  // warm-up: the workers exist and have run once
    for (int i = 0; i < o.rounds; ++i) {
      if (gap > 0) std::this_thread::sleep_for(std::chrono::microseconds(gap));
      const Round r = one_round(pool, chunks, o.chunk_us);
      wall.push_back(r.wall_us / 1000.0);
      used.push_back(r.threads_used);
      if (r.last_join_us >= 0)
        join.push_back(r.last_join_us);
      else
        ++missed;
    }
    const double med = median(wall), threads_used = median(used);
    const double p50 = percentile(join, 0.5), p90 = percentile(join, 0.9);
    std::fprintf(table, "%8lld %10.3f %9.3f %8.1f %10s %10s %4d/%d\n", static_cast<long long>(gap), med,
                 ideal_ms, threads_used, p50 < 0 ? "-" : std::to_string(int(p50 + 0.5)).c_str(),
                 p90 < 0 ? "-" : std::to_string(int(p90 + 0.5)).c_str(), missed, o.rounds);
    if (json.file)
      std::fprintf(json.file,
                   "{\"gap_us\":%lld,\"threads\":%d,\"chunks\":%lld,\"chunk_us\":%d,\"rounds\":%d,"
                   "\"median_ms\":%s,\"ideal_ms\":%s,\"threads_used\":%s,\"join_p50_us\":%s,"
                   "\"join_p90_us\":%s,\"missed\":%d}\n",
                   static_cast<long long>(gap), threads, static_cast<long long>(chunks), o.chunk_us, o.rounds,
                   json_number(med).c_str(), json_number(ideal_ms).c_str(), json_number(threads_used).c_str(),
                   p50 < 0 ? "null" : json_number(p50).c_str(), p90 < 0 ? "null" : json_number(p90).c_str(),
                   missed);
    std::fflush(table);
  }
  return 0;
}

}  // namespace longrun::bench
