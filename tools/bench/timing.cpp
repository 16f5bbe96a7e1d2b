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
  if (!ms.empty()) {
    t.median_ms = median(ms);
    t.min_ms = *std::min_element(ms.begin(), ms.end());
    t.max_ms = *std::max_element(ms.begin(), ms.end());
  }
  return t;
}

}  // namespace longrun::bench
