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

// The peer's time over ours, round by round: each of `rounds` rounds runs `ours` `warmup`
// times untimed and once timed, then the peer likewise (`peer_reset`, when set, before each
// of its runs, untimed); `after_ours` / `after_peer` (when set) run after that side's timed
// run, untimed, to let its spinning threads go idle before the other side runs. A slowdown
// that lasts longer than a round (another tenant on the core, a busy cache) then falls on
// both sides of that round's ratio: on a shared 2-vCPU VM the paired ratios of five repeated
// runs spread about half as much as the ratios of medians taken one side after the other
// (tools/bench/README.md, Paired rounds).
struct PairedRatio {
  double median = 0, min = 0, max = 0;  // of the per-round ratios peer ms / ours ms
  int rounds = 0;
};
Result<PairedRatio> measure_paired(const std::function<Status()>& ours, const std::function<Status()>& peer,
                                   const std::function<void()>& peer_reset, int rounds, int warmup,
                                   const std::function<void()>& after_ours = {},
                                   const std::function<void()>& after_peer = {},
                                   const std::function<double()>& ours_device_ms = {});

}  // namespace longrun::bench
