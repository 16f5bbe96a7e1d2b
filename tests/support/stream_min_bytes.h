// Sets cpu::stream_min_bytes() (backends/cpu/cpu_isa.h) for a scope, so that a test can make
// small outputs take the non-temporal-store paths of the cpu kernels.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_isa.h"

namespace longrun::test_support {

class ScopedStreamMinBytes {
 public:
  explicit ScopedStreamMinBytes(int64_t bytes) : saved_(cpu::stream_min_bytes()) {
    cpu::stream_min_bytes() = bytes;
  }
  ~ScopedStreamMinBytes() { cpu::stream_min_bytes() = saved_; }
  ScopedStreamMinBytes(const ScopedStreamMinBytes&) = delete;
  ScopedStreamMinBytes& operator=(const ScopedStreamMinBytes&) = delete;

 private:
  int64_t saved_;
};

}  // namespace longrun::test_support
