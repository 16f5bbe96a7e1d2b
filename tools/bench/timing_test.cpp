// Unit tests of longrun-bench's paired rounds (timing.h, measure_paired): the order of the
// runs in a round, the rounds counted, the ratios taken from device times where the backend
// gives them, and a failing run stopping the rounds with its Status. No wall time is
// asserted (speed is measured by benchmarks, not by tests).
#include "timing.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace longrun::bench {
namespace {

TEST_CASE("bench timing: paired rounds run ours then the peer, each warmed, settling after each side") {
  std::string log;
  const auto ours = [&] {
    log += 'o';
    return Status{};
  };
  const auto peer = [&] {
    log += 'p';
    return Status{};
  };
  const auto reset = [&] { log += 'r'; };
  const auto after_ours = [&] { log += 'A'; };
  const auto after_peer = [&] { log += 'B'; };
  Result<PairedRatio> p = measure_paired(ours, peer, reset, 3, 2, after_ours, after_peer);
  REQUIRE(p.ok());
  CHECK(p->rounds == 3);
  // Per round: two untimed runs and one timed run of each side, the peer's each after a reset.
  CHECK(log ==
        "oooArprprpB"
        "oooArprprpB"
        "oooArprprpB");
  CHECK(p->min <= p->median);
  CHECK(p->median <= p->max);
}

TEST_CASE("bench timing: paired ratios are peer over ours, ours from its device time") {
  // Ours reports a device time of 1e9 ms per run: every ratio is then the peer's wall time
  // (well under a second here) over 1e9, far below 1, whatever the machine's speed.
  int calls = 0;
  Result<PairedRatio> p = measure_paired(
      [&] {
        ++calls;
        return Status{};
      },
      [] { return Status{}; }, nullptr, 5, 1, nullptr, nullptr, [] { return 1e9; });
  REQUIRE(p.ok());
  CHECK(calls == 10);
  CHECK(p->rounds == 5);
  CHECK(p->max < 1e-3);
  CHECK(p->min >= 0.0);
}

TEST_CASE("bench timing: a failing run stops the paired rounds with its Status") {
  int peer_runs = 0;
  Result<PairedRatio> p = measure_paired(
      [] { return Status{}; }, [&] { return ++peer_runs == 3 ? invalid_argument("peer broke") : Status{}; },
      nullptr, 5, 1);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message() == "peer broke");
  CHECK(peer_runs == 3);  // round 2's timed run failed; no third round
}

}  // namespace
}  // namespace longrun::bench
