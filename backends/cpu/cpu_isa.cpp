#include "cpu/cpu_isa.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace longrun::cpu {

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (Isa i : {Isa::scalar, Isa::avx2, Isa::avx512})
    if (isa_name(i) == name) return i;
  return std::nullopt;
}

Isa detect_isa() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return Isa::scalar;
  const bool osxsave = c & (1u << 27), fma = c & (1u << 12), f16c = c & (1u << 29), avx = c & (1u << 28);
  if (!osxsave || !avx) return Isa::scalar;
  unsigned xcr0_lo, xcr0_hi;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool os_ymm = (xcr0_lo & 0x6u) == 0x6u;    // XMM + YMM state
  const bool os_zmm = (xcr0_lo & 0xe6u) == 0xe6u;  // + opmask, ZMM_Hi256, Hi16_ZMM
  if (!os_ymm || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return Isa::scalar;
  const bool avx2 = b & (1u << 5);
  if (!(avx2 && fma && f16c)) return Isa::scalar;
  const bool f = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
  if (os_zmm && f && dq && bw && vl) return Isa::avx512;
  return Isa::avx2;
#else
  return Isa::scalar;
#endif
}

namespace {

// cpu0's data (or unified) caches from Linux sysfs: bytes per level, index 0 unused; a
// level sysfs does not list stays 0.
struct CacheSizes {
  int64_t bytes[8] = {};
  int highest = 0;
};

const CacheSizes& cache_sizes() {
  static const CacheSizes sizes = [] {
    CacheSizes c;
    for (int index = 0; index < 16; ++index) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
      std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
      int level = 0;
      std::string type, size;
      if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) continue;
      if (type == "Instruction" || level < 1 || level >= 8) continue;
      char* end = nullptr;
      const long long value = std::strtoll(size.c_str(), &end, 10);
      const int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
      if (value <= 0 || value > (1ll << 40) >> shift) continue;
      c.bytes[level] = int64_t(value) << shift;
      c.highest = std::max(c.highest, level);
    }
    return c;
  }();
  return sizes;
}

}  // namespace

int64_t last_level_cache_bytes() { return cache_sizes().bytes[cache_sizes().highest]; }

int64_t l2_cache_bytes() { return cache_sizes().bytes[2]; }

int64_t& stream_min_bytes() {
  static int64_t bytes = [] {
    const int64_t llc = last_level_cache_bytes();
    return llc > 0 ? llc : std::numeric_limits<int64_t>::max();
  }();
  return bytes;
}

bool rows_streamable(const void* y, int64_t row_floats, int64_t bytes) {
  return bytes >= stream_min_bytes() && reinterpret_cast<uintptr_t>(y) % 64 == 0 && row_floats % 16 == 0;
}

}  // namespace longrun::cpu
