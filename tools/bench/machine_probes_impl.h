// The machine check's vector kernels (and the store_copy peer's) written once against a vector struct V (T,
// L, zero, set1, load, store, fmadd, add); included only by machine_probes_avx2.cpp /
// machine_probes_avx512.cpp.
#pragma once

#include <cstdint>

namespace longrun::bench::probes {
namespace {  // internal linkage: each ISA file owns its instantiations

// The sum of a's lanes (once per call: through memory, no shuffles needed).
template <class V>
float lane_sum(typename V::T a) {
  float lanes[V::L];
  V::store(lanes, a);
  float s = 0;
  for (float x : lanes) s += x;
  return s;
}

template <class V>
float fma_throughput(int64_t iters) {
  using T = typename V::T;
  constexpr int kChains = 12;
  T a[kChains];
  for (int c = 0; c < kChains; ++c) a[c] = V::set1(0.001f * float(c));
  const T m = V::set1(0.9999f), b = V::set1(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) a[c] = V::fmadd(a[c], m, b);
  }
  T s = V::zero();
  for (int c = 0; c < kChains; ++c) s = V::add(s, a[c]);
  return lane_sum<V>(s);
}

template <class V>
float row_gather(const float* rows, const int32_t* idx, const float* w, int64_t n) {
  using T = typename V::T;
  constexpr int kVecs = 64 / V::L;  // one 64-float row
  T a0[kVecs], a1[kVecs];
  for (int e = 0; e < kVecs; ++e) a0[e] = a1[e] = V::zero();
  for (int64_t i = 0; i + 2 <= n; i += 2) {
    const float* r0 = rows + int64_t(idx[i]) * 64;
    const float* r1 = rows + int64_t(idx[i + 1]) * 64;
    const T w0 = V::set1(w[i]), w1 = V::set1(w[i + 1]);
#pragma GCC unroll 8
    for (int e = 0; e < kVecs; ++e) {
      a0[e] = V::fmadd(w0, V::load(r0 + e * V::L), a0[e]);
      a1[e] = V::fmadd(w1, V::load(r1 + e * V::L), a1[e]);
    }
  }
  T s = V::zero();
  for (int e = 0; e < kVecs; ++e) s = V::add(s, V::add(a0[e], a1[e]));
  return lane_sum<V>(s);
}

template <class V>
void store_copy(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 4 * V::L <= n; i += 4 * V::L) {
    const typename V::T a = V::load(src + i), b = V::load(src + i + V::L), c = V::load(src + i + 2 * V::L),
                        d = V::load(src + i + 3 * V::L);
    V::store(dst + i, a);
    V::store(dst + i + V::L, b);
    V::store(dst + i + 2 * V::L, c);
    V::store(dst + i + 3 * V::L, d);
  }
  for (; i < n; ++i) dst[i] = src[i];
}

}  // namespace
}  // namespace longrun::bench::probes
