// CPU lists and per-thread pinning with restore (thread_pool_affinity.h).
#include "thread_pool_affinity.h"

#include <algorithm>
#include <string>

#include "longrun/thread_pool.h"

#if defined(__linux__)
#include <sched.h>
#define LONGRUN_HAVE_AFFINITY 1
#endif

namespace longrun {

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if LONGRUN_HAVE_AFFINITY
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  return cpus;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::vector<int> sorted(cpus);
  std::sort(sorted.begin(), sorted.end());
  std::string text;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(sorted[i]);
    if (j > i) text += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return text.empty() ? "none" : text;
}

namespace detail {

Status validate_cpu_list(const std::vector<int>& cpus) {
#if LONGRUN_HAVE_AFFINITY
  const std::vector<int> allowed = allowed_cpus();
  for (size_t i = 0; i < cpus.size(); ++i) {
    const int c = cpus[i];
    if (std::find(cpus.begin(), cpus.begin() + ptrdiff_t(i), c) != cpus.begin() + ptrdiff_t(i))
      return invalid_argument("thread pool affinity: CPU " + std::to_string(c) + " is listed twice");
    if (!std::binary_search(allowed.begin(), allowed.end(), c))
      return invalid_argument("thread pool affinity: CPU " + std::to_string(c) +
                              " is not one this process may run on (allowed: " + cpu_list_text(allowed) +
                              ")");
  }
  return {};
#else
  if (cpus.empty()) return {};
  return unsupported("thread pool affinity: pinning threads is not supported on this platform");
#endif
}

#if LONGRUN_HAVE_AFFINITY
namespace {
// What each pin_current_thread replaced, innermost last (a thread may enter a pinned arena
// from inside another); `pinned` is false when that pin did not take effect.
struct SavedMask {
  bool pinned = false;
  cpu_set_t mask;
};
thread_local std::vector<SavedMask> saved_masks;
}  // namespace

void pin_current_thread(int cpu) {
  SavedMask saved;
  CPU_ZERO(&saved.mask);
  if (cpu >= 0 && sched_getaffinity(0, sizeof(saved.mask), &saved.mask) == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    // A failure (the CPU went offline or the process mask shrank since validation) leaves
    // the thread where it was: a slower run, never a wrong one.
    saved.pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  saved_masks.push_back(saved);
}

void unpin_current_thread() {
  if (saved_masks.empty()) return;
  const SavedMask saved = saved_masks.back();
  saved_masks.pop_back();
  if (saved.pinned) sched_setaffinity(0, sizeof(saved.mask), &saved.mask);
}

int current_cpu() { return sched_getcpu(); }
#else
void pin_current_thread(int) {}
void unpin_current_thread() {}
int current_cpu() { return -1; }
#endif

}  // namespace detail
}  // namespace longrun
