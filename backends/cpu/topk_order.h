// The total order of the top-k ops (attrs.h) as unsigned integers, shared by the cpu top-k
// kernels (selection.cpp, matmul_topk.cpp): a value's order key, a (key, index) composite and
// a vectorised "reaches the threshold" test over a run of values.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace longrun::cpu {

// Unsigned key whose order is the ops' order: larger value larger key, every NaN the
// largest key, -0 the same key as +0.
inline uint32_t order_key(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  uint32_t key = u ^ (uint32_t(int32_t(u) >> 31) | 0x80000000u);  // flip negatives, set the sign of positives
  key = u == 0x80000000u ? 0x80000000u : key;
  return (u & 0x7fffffffu) > 0x7f800000u ? 0xffffffffu : key;
}

// (key, index) as one u64 whose descending order is the op's: larger value first, then the
// lower index.
inline uint64_t composite(uint32_t key, int64_t j) {
  return uint64_t(key) << 32 | (0xffffffffu - uint32_t(j));
}

// The index half of a composite.
inline int32_t composite_index(uint64_t c) { return int32_t(0xffffffffu - uint32_t(c)); }

// The float whose key is `key` (order_key's inverse on non-NaN keys).
inline float key_value(uint32_t key) {
  const uint32_t u = key & 0x80000000u ? key ^ 0x80000000u : ~key;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// Bit b set when !(x[b * stride] < tf) (x >= tf or NaN), for b < len <= 64: a mask first,
// then only the few hits are visited. SSE2 (the x86-64 baseline) compares 4 values at a time
// on contiguous rows.
inline uint64_t reaching(const float* x, int64_t stride, int64_t len, float tf) {
  uint64_t bits = 0;
  int64_t b = 0;
#if defined(__SSE2__)
  if (stride == 1) {
    const __m128 t = _mm_set1_ps(tf);
    for (; b + 4 <= len; b += 4)
      bits |= uint64_t(_mm_movemask_ps(_mm_cmpnlt_ps(_mm_loadu_ps(x + b), t))) << b;
  }
#endif
  for (; b < len; ++b) bits |= uint64_t(!(x[b * stride] < tf)) << b;
  return bits;
}

}  // namespace longrun::cpu
