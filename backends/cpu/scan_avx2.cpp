// AVX2 column scans of cummax and segment_max (see scan.h): 8 columns per vector, up to
// four vectors per row step so that the per-column dependency chains overlap.
#define LONGRUN_CPU_ISA_FILE
#include <immintrin.h>

#include "cpu/scan.h"

namespace longrun::cpu {
namespace {

constexpr int kLanes = 8;
constexpr int kUnroll = 16;  // 128 columns per row step

alignas(32) constexpr int32_t kMaskWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
__m256i lanes_below(int64_t n) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskWindow + 8 - (n < kLanes ? n : kLanes)));
}

// The reference's max step: take v when v >= run or v is NaN; a NaN run is kept otherwise.
__m256 step(__m256 run, __m256 v) {
  const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, run, _CMP_GE_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_ps(run, v, take);
}

int vectors_for(int64_t left) {
  return int(left >= kUnroll * kLanes ? kUnroll : (left + kLanes - 1) / kLanes);
}

// A full block of kFull unmasked vectors with compile-time shape, so that the running maxima
// stay in registers (with a runtime vector count the compiler keeps `run` on the stack).
// 8 of the 16 ymm registers hold maxima; the rest are the loads and compare masks.
constexpr int kFull = 8;

template <bool Exclusive>
void cummax_full_block(const float* x, float* y, int64_t n, int64_t stride, bool reverse, int64_t c) {
  __m256 run[kFull];
#pragma GCC unroll 8
  for (int v = 0; v < kFull; ++v) run[v] = _mm256_set1_ps(-__builtin_inff());
  const int64_t step_rows = reverse ? -stride : stride;
  const int64_t first = (reverse ? n - 1 : 0) * stride + c;
  const float* xp = x + first;
  float* yp = y + first;
  for (int64_t t = 0; t < n; ++t, xp += step_rows, yp += step_rows) {
#pragma GCC unroll 8
    for (int v = 0; v < kFull; ++v) {
      const __m256 xv = _mm256_loadu_ps(xp + v * kLanes);
      if constexpr (Exclusive) _mm256_storeu_ps(yp + v * kLanes, run[v]);
      run[v] = step(run[v], xv);
      if constexpr (!Exclusive) _mm256_storeu_ps(yp + v * kLanes, run[v]);
    }
  }
}

void cummax_cols(const float* x, float* y, int64_t n, int64_t w, int64_t stride, bool reverse,
                 bool exclusive) {
  int64_t c = 0;
  for (; w - c >= kFull * kLanes; c += kFull * kLanes) {
    if (exclusive)
      cummax_full_block<true>(x, y, n, stride, reverse, c);
    else
      cummax_full_block<false>(x, y, n, stride, reverse, c);
  }
  for (; c < w; c += kUnroll * kLanes) {
    const int vecs = vectors_for(w - c);
    __m256 run[kUnroll];
    __m256i m[kUnroll];
    for (int v = 0; v < vecs; ++v)
      run[v] = _mm256_set1_ps(-__builtin_inff()), m[v] = lanes_below(w - c - v * kLanes);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t row = (reverse ? n - 1 - t : t) * stride + c;
      for (int v = 0; v < vecs; ++v) {
        const __m256 xv = _mm256_maskload_ps(x + row + v * kLanes, m[v]);
        if (exclusive) _mm256_maskstore_ps(y + row + v * kLanes, m[v], run[v]);
        run[v] = step(run[v], xv);
        if (!exclusive) _mm256_maskstore_ps(y + row + v * kLanes, m[v], run[v]);
      }
    }
  }
}

void segment_max_cols(const float* x, float* y, int64_t n, int64_t w, int64_t stride, int64_t segment) {
  for (int64_t c = 0; c < w; c += kUnroll * kLanes) {
    const int vecs = vectors_for(w - c);
    __m256i m[kUnroll];
    for (int v = 0; v < vecs; ++v) m[v] = lanes_below(w - c - v * kLanes);
    for (int64_t b = 0, e = 0, s = 0; b < n; b = e, ++s) {
      e = n - b < segment ? n : b + segment;  // ragged last segment; no b + segment overflow
      __m256 run[kUnroll];
      for (int v = 0; v < vecs; ++v) run[v] = _mm256_set1_ps(-__builtin_inff());
      for (int64_t i = b; i < e; ++i)
        for (int v = 0; v < vecs; ++v)
          run[v] = step(run[v], _mm256_maskload_ps(x + i * stride + c + v * kLanes, m[v]));
      for (int v = 0; v < vecs; ++v) _mm256_maskstore_ps(y + s * stride + c + v * kLanes, m[v], run[v]);
    }
  }
}

}  // namespace

const ScanIsa kScanAvx2 = {&cummax_cols, &segment_max_cols};

}  // namespace longrun::cpu
