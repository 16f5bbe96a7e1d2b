// Timing of repeated runs: warm-up runs first (untimed), then `repeat` timed runs with
// std::chrono::steady_clock (or the device's own event time for a device backend); the
// median is the reported figure.
#pragma once

#include <functional>
#include <vector>

#include "longrun/status.h"

namespace longrun::bench {

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int runs = 0;
};

// Median of the samples (mean of the middle two for an even count); 0 for none.
double median(std::vector<double> samples);

// Runs `reset` (untimed, when set) then times `run`, `warmup` + `repeat` times; the first
// `warmup` samples are dropped. Stops at the first failing run and returns its Status.
// `device_ms`, when set and >= 0 after a run, is that run's sample instead of the wall time
// (a device backend's event time of the nodes, without the host copies).
Result<Timing> measure(const std::function<Status()>& run, const std::function<void()>& reset, int warmup,
                       int repeat, const std::function<double()>& device_ms = {});

}  // namespace longrun::bench
