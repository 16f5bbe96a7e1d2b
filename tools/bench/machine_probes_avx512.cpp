// AVX-512 kernels of the machine check (machine_probes.h); compiled with -mavx512f.
#include <immintrin.h>

#include "machine_probes.h"
#include "machine_probes_impl.h"

namespace longrun::bench::probes {
namespace {

struct V16 {
  using T = __m512;
  static constexpr int L = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static void store(float* p, T a) { _mm512_storeu_ps(p, a); }
};

}  // namespace

float fma_throughput_avx512(int64_t iters) { return fma_throughput<V16>(iters); }

float row_gather_avx512(const float* rows, const int32_t* idx, const float* w, int64_t n) {
  return row_gather<V16>(rows, idx, w, n);
}

void store_copy_avx512(float* dst, const float* src, int64_t n) { store_copy<V16>(dst, src, n); }

}  // namespace longrun::bench::probes
