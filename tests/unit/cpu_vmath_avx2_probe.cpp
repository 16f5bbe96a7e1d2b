// AVX2 code for cpu_vmath_test.cpp, compiled with the AVX2 flags (tests/CMakeLists.txt):
// no test macros and no static initialisers here, so nothing runs before the test has checked
// that the machine has AVX2.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backends/cpu/vmath_avx2.h"
#include "unit/cpu_vmath_probe.h"

namespace longrun::test_support {

// Counts the f32 bit patterns u = first, first + step, ... <= last (8 at a time) where
// avx2::exp_neg_ps(x) differs bit for bit from what it promises: exp_ps(x) for x >= the
// smallest normal result's argument (or NaN), +0 below.
uint64_t exp_neg_mismatches_avx2(uint32_t first, uint32_t last, uint32_t step) {
  using namespace cpu::avx2;
  uint64_t bad = 0;
  alignas(32) float in[8], got[8], want[8];
  for (uint64_t u = first; u <= last; u += uint64_t(step) * 8) {
    for (int i = 0; i < 8; ++i) {
      const uint32_t bits = uint32_t(std::min<uint64_t>(u + uint64_t(i) * step, last));
      std::memcpy(&in[i], &bits, 4);
    }
    const __m256 x = _mm256_load_ps(in);
    _mm256_store_ps(got, exp_neg_ps(x));
    const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(cpu::vmath::kExpMinNormal), _CMP_NLT_UQ);
    _mm256_store_ps(want, _mm256_and_ps(exp_ps(x), keep));
    for (int i = 0; i < 8; ++i) bad += std::memcmp(&got[i], &want[i], 4) != 0;
  }
  return bad;
}

}  // namespace longrun::test_support
