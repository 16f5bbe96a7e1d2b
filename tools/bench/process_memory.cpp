#include "process_memory.h"

#include <cstdio>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace longrun::bench {
namespace {

// "<field>:   123 kB" of a /proc file (/proc/self/status, /proc/meminfo), in bytes.
int64_t status_field(const char* field, const char* file = "/proc/self/status") {
  std::FILE* f = std::fopen(file, "r");
  if (!f) return -1;
  char line[256];
  int64_t out = -1;
  const size_t len = std::strlen(field);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, field, len) == 0 && line[len] == ':') {
      long long kb = 0;
      if (std::sscanf(line + len + 1, "%lld", &kb) == 1) out = int64_t(kb) * 1024;
      break;
    }
  }
  std::fclose(f);
  return out;
}

}  // namespace

bool reset_peak_rss() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

int64_t peak_rss_bytes() { return status_field("VmHWM"); }
int64_t current_rss_bytes() { return status_field("VmRSS"); }
int64_t available_memory_bytes() { return status_field("MemAvailable", "/proc/meminfo"); }

}  // namespace longrun::bench
