#include "timing.h"

#include <algorithm>
#include <chrono>

namespace longrun::bench {

double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  return samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
}

namespace {

// Median, min and max of v into the three outputs (left as they are when v is empty).
void summarize(const std::vector<double>& v, double* med, double* lo, double* hi) {
  if (v.empty()) return;
  *med = median(v);
  *lo = *std::min_element(v.begin(), v.end());
  *hi = *std::max_element(v.begin(), v.end());
}

// `warmup` untimed runs, then one timed one (ms; a device time where `device_ms` gives one).
Result<double> warm_then_time(const std::function<Status()>& run, const std::function<void()>& reset,
                              int warmup, const std::function<double()>& device_ms) {
  LR_ASSIGN_OR_RETURN(Timing t, measure(run, reset, warmup, 1, device_ms));
  return t.median_ms;
}

}  // namespace

Result<Timing> measure(const std::function<Status()>& run, const std::function<void()>& reset, int warmup,
                       int repeat, const std::function<double()>& device_ms) {
  std::vector<double> ms;
  ms.reserve(size_t(repeat));
  for (int i = 0; i < warmup + repeat; ++i) {
    if (reset) reset();
    const auto t0 = std::chrono::steady_clock::now();
    Status st = run();
    const auto t1 = std::chrono::steady_clock::now();
    if (!st.ok()) return st;
    const double device = device_ms ? device_ms() : -1;
    if (i >= warmup)
      ms.push_back(device >= 0 ? device : std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  Timing t;
  t.runs = int(ms.size());
  summarize(ms, &t.median_ms, &t.min_ms, &t.max_ms);
  return t;
}

Result<PairedRatio> measure_paired(const std::function<Status()>& ours, const std::function<Status()>& peer,
                                   const std::function<void()>& peer_reset, int rounds, int warmup,
                                   const std::function<void()>& after_ours,
                                   const std::function<void()>& after_peer,
                                   const std::function<double()>& ours_device_ms) {
  std::vector<double> ratios;
  for (int i = 0; i < rounds; ++i) {
    LR_ASSIGN_OR_RETURN(const double ours_ms, warm_then_time(ours, nullptr, warmup, ours_device_ms));
    if (after_ours) after_ours();
    LR_ASSIGN_OR_RETURN(const double peer_ms, warm_then_time(peer, peer_reset, warmup, {}));
    if (after_peer) after_peer();
    if (ours_ms > 0) ratios.push_back(peer_ms / ours_ms);
  }
  PairedRatio p;
  p.rounds = int(ratios.size());
  summarize(ratios, &p.median, &p.min, &p.max);
  return p;
}

}  // namespace longrun::bench
