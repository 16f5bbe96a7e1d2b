// The machine check (machine_check.h): the probes' rounds, their statistics and output.
#include "machine_check.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "machine_probes.h"
#include "provenance.h"
#include "report.h"
#include "timing.h"

namespace longrun::bench {
namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double seconds(F&& f) {
  const Clock::time_point t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Each probe runs about 0.1-0.4 ms of a 2-4 GHz core per round.
constexpr int64_t kChainFmas = 200000;
constexpr int64_t kThroughputSteps = 50000;  // 12 chains: 600k vector FMAs
constexpr int64_t kTableRows = 64;           // 64 rows of 64 floats: 16 KiB, in L1
constexpr int64_t kGatheredRows = 65536;
constexpr size_t kCopyBytes = size_t(8) << 20;

Probe stats(const char* name, const char* unit, const std::vector<double>& v) {
  Probe p{name, unit};
  p.min = v.front();
  p.max = v.front();
  for (double x : v) {
    p.min = std::min(p.min, x);
    p.max = std::max(p.max, x);
  }
  p.median = median(v);
  return p;
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

int digits_of(const Probe& p) { return p.name == "row_gather" || p.name == "clock" ? 2 : 1; }

bool has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool has_avx512() { return has_avx2() && __builtin_cpu_supports("avx512f"); }

}  // namespace

void probes::store_copy(float* dst, const float* src, int64_t n) {
  static const bool avx512 = has_avx512(), avx2 = has_avx2();
  if (avx512) return store_copy_avx512(dst, src, n);
  if (avx2) return store_copy_avx2(dst, src, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

MachineCheck run_machine_check(int rounds) {
  MachineCheck m;
  m.rounds = rounds;
  const bool avx2 = has_avx2(), avx512 = has_avx512();
  m.isa = avx512 ? "avx512" : avx2 ? "avx2" : "none";
  if (!avx2 || rounds < 1) return m;

  std::vector<float> rows(static_cast<size_t>(kTableRows * 64)), w(static_cast<size_t>(kGatheredRows));
  std::vector<int32_t> idx(static_cast<size_t>(kGatheredRows));
  uint64_t s = 1;
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = float(i % 97) * 0.01f;
  for (int64_t i = 0; i < kGatheredRows; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;  // 64-bit LCG
    idx[size_t(i)] = int32_t((s >> 33) % uint64_t(kTableRows));
    w[size_t(i)] = 1.0f / float(1 + i % 7);
  }
  std::vector<float> src(kCopyBytes / sizeof(float), 1.0f), dst(kCopyBytes / sizeof(float), 2.0f);

  const int lanes = avx512 ? 16 : 8;
  volatile double sink = 0;  // every kernel's result lands here: none can be dropped
  std::vector<double> ghz, thr_s, gather_s, gbps, store_gbps;
  for (int t = -1; t < rounds; ++t) {  // round -1 warms up (pages, caches, frequency)
    const double chain = seconds([&] { sink = sink + probes::fma_chain_avx2(kChainFmas); });
    const double thr = seconds([&] {
      sink = sink + (avx512 ? probes::fma_throughput_avx512(kThroughputSteps)
                            : probes::fma_throughput_avx2(kThroughputSteps));
    });
    const double gather = seconds([&] {
      sink = sink + (avx512 ? probes::row_gather_avx512(rows.data(), idx.data(), w.data(), kGatheredRows)
                            : probes::row_gather_avx2(rows.data(), idx.data(), w.data(), kGatheredRows));
    });
    const double copy = seconds([&] {
      std::memcpy(dst.data(), src.data(), kCopyBytes);
      sink = sink + dst[size_t(t + 1) % dst.size()];
    });
    const double store = seconds([&] {
      probes::store_copy(dst.data(), src.data(), int64_t(dst.size()));
      sink = sink + dst[size_t(t + 2) % dst.size()];
    });
    if (t < 0) continue;
    ghz.push_back(4.0 * double(kChainFmas) / chain / 1e9);
    thr_s.push_back(thr);
    gather_s.push_back(gather);
    gbps.push_back(2.0 * double(kCopyBytes) / copy / 1e9);
    store_gbps.push_back(2.0 * double(kCopyBytes) / store / 1e9);
  }
  // Cycles at the median clock: one round's chain and its other probes need not share a
  // hiccup, and pairing them would add the chain's noise to theirs.
  const double hz = median(ghz) * 1e9;
  std::vector<double> fpc, cpr;
  for (double t : thr_s) fpc.push_back(12.0 * double(kThroughputSteps) * lanes * 2.0 / t / hz);
  for (double t : gather_s) cpr.push_back(t * hz / double(kGatheredRows));
  m.probes = {stats("clock", "GHz", ghz), stats("fma", "flop/cycle", fpc),
              stats("row_gather", "cycles/row", cpr), stats("memcpy", "GB/s", gbps),
              stats("store_copy", "GB/s", store_gbps)};
  return m;
}

std::string machine_check_summary(const MachineCheck& m) {
  if (m.probes.empty()) return "no probes (they need AVX2 and FMA)";
  std::string s;
  for (const Probe& p : m.probes)
    s += (s.empty() ? "" : ", ") + p.name + " " + fixed(p.median, digits_of(p)) + " " + p.unit;
  return s + " (medians of " + std::to_string(m.rounds) + " rounds; " + m.isa + ")";
}

void write_machine_check_json(std::FILE* f, const MachineCheck& m, const std::string& when) {
  if (f == nullptr) return;
  for (const Probe& p : m.probes)
    std::fprintf(f,
                 "{\"probe\":%s,\"when\":%s,\"isa\":%s,\"rounds\":%d,\"unit\":%s,\"min\":%s,\"median\":%s,"
                 "\"max\":%s,\"threads\":1%s}\n",
                 json_string(p.name).c_str(), json_string(when).c_str(), json_string(m.isa).c_str(), m.rounds,
                 json_string(p.unit).c_str(), json_number(p.min).c_str(), json_number(p.median).c_str(),
                 json_number(p.max).c_str(), json_provenance_fields().c_str());
  std::fflush(f);
}

int run_machine(const MachineOptions& o) {
  JsonSink json;
  if (!open_json(o.json, &json)) return 2;
  std::FILE* table = json.table();
  const MachineCheck m = run_machine_check(o.rounds);
  std::fprintf(table, "longrun-bench machine: %d rounds of each probe, vector ISA %s; min / median / max\n",
               m.rounds, m.isa.c_str());
  if (m.probes.empty()) {
    std::fprintf(table, "  %s\n", machine_check_summary(m).c_str());
    return 0;
  }
  std::fprintf(table, "%-12s %10s %10s %10s  %s\n", "probe", "min", "median", "max", "unit");
  for (const Probe& p : m.probes) {
    const int d = digits_of(p);
    std::fprintf(table, "%-12s %10s %10s %10s  %s\n", p.name.c_str(), fixed(p.min, d).c_str(),
                 fixed(p.median, d).c_str(), fixed(p.max, d).c_str(), p.unit.c_str());
  }
  std::fputs(
      "Bounds on a core with two 512-bit FMA pipes: fma 64 flop/cycle, row_gather 2 cycles/row\n"
      "(4 loads and 4 FMAs; two 256-bit pipes: 32 and 4). Far from them, or a wide min-max\n"
      "spread: another tenant shares the core or the VM is descheduled; time nothing then.\n"
      "store_copy / memcpy: what an op writing through the cache can reach of a memcpy.\n",
      table);
  write_machine_check_json(json.file, m, "machine");
  return 0;
}

}  // namespace longrun::bench
