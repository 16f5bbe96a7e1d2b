// What the ISA probe files (cpu_vmath_avx2_probe.cpp, cpu_vmath_avx512_probe.cpp), compiled
// with their own flags, report to cpu_vmath_test.cpp.
#pragma once

#include <cstdint>

namespace longrun::test_support {

// avx512::exp_neg_ps on the f32 bit patterns first, first + step, ... <= last: the largest
// error against double exp where the result should be normal, and how many inputs broke the
// rest of its contract (a NaN that did not stay NaN, an input below the flush threshold whose
// result is not +0).
struct ExpNegProbe {
  double max_ulp = 0;
  float worst_x = 0;
  uint64_t bad = 0;
};
ExpNegProbe exp_neg_probe_avx512(uint32_t first, uint32_t last, uint32_t step);
// Whether avx512::exp_neg_ps gives +inf at 88.73, 89, 100, 1e30 and +inf.
bool exp_neg_overflows_avx512();

uint64_t exp_neg_mismatches_avx2(uint32_t first, uint32_t last, uint32_t step);

}  // namespace longrun::test_support
