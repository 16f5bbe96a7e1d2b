// AVX-512 code for cpu_vmath_test.cpp, compiled with the AVX-512 flags (tests/CMakeLists.txt):
// no test macros and no static initialisers here, so nothing runs before the test has checked
// that the machine has AVX-512.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backends/cpu/vmath_avx512.h"
#include "unit/cpu_vmath_probe.h"

namespace longrun::test_support {

ExpNegProbe exp_neg_probe_avx512(uint32_t first, uint32_t last, uint32_t step) {
  ExpNegProbe res;
  alignas(64) float in[16], got[16];
  for (uint64_t u = first; u <= last; u += uint64_t(step) * 16) {
    for (int i = 0; i < 16; ++i) {
      const uint32_t bits = uint32_t(std::min<uint64_t>(u + uint64_t(i) * step, last));
      std::memcpy(&in[i], &bits, 4);
    }
    _mm512_store_ps(got, cpu::avx512::exp_neg_ps(_mm512_load_ps(in)));
    for (int i = 0; i < 16; ++i) {
      const float x = in[i], y = got[i];
      if (std::isnan(x)) {
        res.bad += !std::isnan(y);
      } else if (x < cpu::vmath::kExpMinNormal) {  // flushed: +0 exactly
        uint32_t yb;
        std::memcpy(&yb, &y, 4);
        res.bad += yb != 0;
      } else {
        const double ref = std::exp(double(x));
        int e = 0;
        std::frexp(float(ref), &e);
        const double ulps = std::fabs(double(y) - ref) / std::ldexp(1.0, e - 24);
        if (ulps > res.max_ulp) res.max_ulp = ulps, res.worst_x = x;
      }
    }
  }
  return res;
}

bool exp_neg_overflows_avx512() {
  alignas(64) float in[16], got[16];
  const float big[] = {88.73f, 89.0f, 100.0f, 1e30f, __builtin_inff()};
  for (int i = 0; i < 16; ++i) in[i] = big[i % 5];
  _mm512_store_ps(got, cpu::avx512::exp_neg_ps(_mm512_load_ps(in)));
  return std::all_of(got, got + 16, [](float y) { return y == __builtin_inff(); });
}

}  // namespace longrun::test_support
