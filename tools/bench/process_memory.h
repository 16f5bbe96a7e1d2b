// The memory this process really holds, for `longrun-bench models`' peak-memory column:
// Linux's resident-set high-water mark (VmHWM in /proc/self/status), reset before a
// measurement by writing "5" to /proc/self/clear_refs (Linux >= 4.0), so that the peak
// belongs to the runs that follow and not to earlier models of the same process. Freed heap
// is handed back first (malloc_trim), so memory earlier models released does not count.
// Elsewhere (or where /proc is not writable) the functions report -1 / false.
#pragma once

#include <cstdint>

namespace longrun::bench {

// Returns freed heap to the OS and resets the high-water mark to the current RSS; false
// when the mark cannot be reset (the peak would then include earlier work: not reported).
bool reset_peak_rss();
// VmHWM in bytes, -1 when unknown.
int64_t peak_rss_bytes();
// VmRSS in bytes, -1 when unknown.
int64_t current_rss_bytes();
// MemAvailable of /proc/meminfo in bytes (what can be allocated without swapping), -1 when
// unknown.
int64_t available_memory_bytes();

}  // namespace longrun::bench
