#include "longrun/file_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace longrun {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, size_t> mappings;  // start -> bytes
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: mappings may be unregistered at exit
  return *r;
}

}  // namespace

void register_file_mapping(const void* base, size_t bytes) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.mappings[reinterpret_cast<uintptr_t>(base)] = bytes;
}

void unregister_file_mapping(const void* base) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.mappings.erase(reinterpret_cast<uintptr_t>(base));
}

size_t release_file_pages(const void* data, size_t bytes) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  if (bytes == 0 || begin + bytes < begin) return 0;
  const uintptr_t end = begin + bytes;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first >= last) return 0;
  Registry& r = registry();
  // Held across madvise so the mapping cannot be unregistered and unmapped in between.
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.mappings.upper_bound(begin);
  if (it == r.mappings.begin()) return 0;
  --it;
  if (end > it->first + it->second) return 0;
  // The mapping is read-only and private, so it holds no modified pages: MADV_DONTNEED only
  // drops them, and the next access reads the file again.
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return size_t(last - first);
}

}  // namespace longrun
