// The floor that `longrun-bench pool --baseline` sets beside the pool's join latency: one
// plain std::thread, blocked on a std::condition_variable, woken after the same idle gap
// while the caller stays busy, as any pool's sleeping worker would be. Also where each woken
// thread ran: on the caller's CPU ("stacked") it could only share that CPU until the
// scheduler moved one of them.
#pragma once

#include <memory>

namespace longrun::bench {

// The CPU the calling thread runs on now; -1 where the platform cannot say.
int current_cpu();

struct WakeRound {
  double wake_us = 0;    // from the notify to the woken thread running
  bool stacked = false;  // it woke on the CPU the caller was on (both CPUs known)
};

class CondvarWaker {
 public:
  CondvarWaker();
  ~CondvarWaker();
  CondvarWaker(const CondvarWaker&) = delete;
  CondvarWaker& operator=(const CondvarWaker&) = delete;
  // Notifies the thread, busy-waits `busy_us` (the caller's share of a call), then waits for
  // the thread to report when and where it woke.
  WakeRound round(int busy_us);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace longrun::bench
