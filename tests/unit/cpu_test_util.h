// Small helpers shared by the cpu kernel unit tests.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "backends/cpu/cpu_isa.h"
#include "longrun/thread_pool.h"

namespace longrun::cpu_test {

// Whether this machine runs the AVX2 kernels (tests of them skip otherwise).
inline bool has_avx2() { return int(cpu::detect_isa()) >= int(cpu::Isa::avx2); }

// A float's bit pattern, to compare results bit for bit (NaNs included).
inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// A thread pool of `threads` threads; fails the test if it cannot be made.
inline std::unique_ptr<ThreadPool> pool_of(int threads) {
  auto p = make_thread_pool(threads);
  REQUIRE(p.ok());
  return std::move(*p);
}

}  // namespace longrun::cpu_test
