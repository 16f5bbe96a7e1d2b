// AVX2 + FMA kernels of the machine check (machine_probes.h); compiled with -mavx2 -mfma.
#include <immintrin.h>

#include "machine_probes.h"
#include "machine_probes_impl.h"

namespace longrun::bench::probes {
namespace {

struct V8 {
  using T = __m256;
  static constexpr int L = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static void store(float* p, T a) { _mm256_storeu_ps(p, a); }
};

}  // namespace

double fma_chain_avx2(int64_t iters) {
  __m128d x = _mm_set_sd(1.0);
  const __m128d y = _mm_set_sd(1e-9);
  for (int64_t i = 0; i < iters; ++i) {
    x = _mm_fmadd_sd(x, y, y);
    __asm__ volatile("" : "+x"(x));  // keeps the chain: the compiler cannot fold it
  }
  return _mm_cvtsd_f64(x);
}

float fma_throughput_avx2(int64_t iters) { return fma_throughput<V8>(iters); }

float row_gather_avx2(const float* rows, const int32_t* idx, const float* w, int64_t n) {
  return row_gather<V8>(rows, idx, w, n);
}

void store_copy_avx2(float* dst, const float* src, int64_t n) { store_copy<V8>(dst, src, n); }

}  // namespace longrun::bench::probes
