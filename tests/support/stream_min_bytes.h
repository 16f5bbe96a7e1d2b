// Sets cpu::stream_min_bytes() (backends/cpu/cpu_isa.h) for a scope, so that a test can make
// small outputs take the non-temporal-store paths of the cpu kernels.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_isa.h"
#include "support/scoped_override.h"

namespace longrun::test_support {

class ScopedStreamMinBytes : public ScopedOverride<int64_t> {
 public:
  explicit ScopedStreamMinBytes(int64_t bytes) : ScopedOverride(cpu::stream_min_bytes(), bytes) {}
};

}  // namespace longrun::test_support
