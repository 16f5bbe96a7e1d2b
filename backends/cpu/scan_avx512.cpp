// AVX-512 column scans of cummax and segment_max (see scan.h): 16 columns per vector, up to
// four vectors per row step so that the per-column dependency chains overlap.
#define LONGRUN_CPU_ISA_FILE
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 flags its own _mm512_undefined_* inside the AVX-512 intrinsic headers (GCC PR 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "cpu/scan.h"

namespace longrun::cpu {
namespace {

constexpr int kLanes = 16;
constexpr int kUnroll = 16;  // 256 columns per row step: 1 KB contiguous per row (few TLB pages per pass)

__mmask16 lanes_below(int64_t n) { return n >= kLanes ? __mmask16(0xffff) : __mmask16((1u << n) - 1u); }

// The reference's max step: take v when v >= run or v is NaN; a NaN run is kept otherwise.
__m512 step(__m512 run, __m512 v) {
  const __mmask16 take = _mm512_cmp_ps_mask(v, run, _CMP_GE_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_mov_ps(run, take, v);
}

// Scans `vecs` (<= kUnroll) column vectors starting at column c; the last one may be partial.
void cummax_block(const float* x, float* y, int64_t n, int64_t stride, bool reverse, bool exclusive,
                  int64_t c, int vecs, __mmask16 last) {
  __m512 run[kUnroll];
  __mmask16 m[kUnroll];
  for (int v = 0; v < vecs; ++v)
    run[v] = _mm512_set1_ps(-__builtin_inff()), m[v] = v + 1 == vecs ? last : 0xffff;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t row = (reverse ? n - 1 - t : t) * stride + c;
    for (int v = 0; v < vecs; ++v) {
      const __m512 xv = _mm512_maskz_loadu_ps(m[v], x + row + v * kLanes);
      if (exclusive) _mm512_mask_storeu_ps(y + row + v * kLanes, m[v], run[v]);
      run[v] = step(run[v], xv);
      if (!exclusive) _mm512_mask_storeu_ps(y + row + v * kLanes, m[v], run[v]);
    }
  }
}

// A full block of kUnroll unmasked vectors with compile-time shape, so that the running
// maxima stay in 16 zmm registers (with a runtime vector count the compiler keeps `run` on the
// stack: a load and a store per vector and row, measured 2x slower at [4096, 512]).
template <bool Exclusive>
void cummax_full_block(const float* x, float* y, int64_t n, int64_t stride, bool reverse, int64_t c) {
  __m512 run[kUnroll];
#pragma GCC unroll 16
  for (int v = 0; v < kUnroll; ++v) run[v] = _mm512_set1_ps(-__builtin_inff());
  const int64_t step_rows = reverse ? -stride : stride;
  const int64_t first = (reverse ? n - 1 : 0) * stride + c;
  const float* xp = x + first;
  float* yp = y + first;
  for (int64_t t = 0; t < n; ++t, xp += step_rows, yp += step_rows) {
#pragma GCC unroll 16
    for (int v = 0; v < kUnroll; ++v) {
      const __m512 xv = _mm512_loadu_ps(xp + v * kLanes);
      if constexpr (Exclusive) _mm512_storeu_ps(yp + v * kLanes, run[v]);
      run[v] = step(run[v], xv);
      if constexpr (!Exclusive) _mm512_storeu_ps(yp + v * kLanes, run[v]);
    }
  }
}

void cummax_cols(const float* x, float* y, int64_t n, int64_t w, int64_t stride, bool reverse,
                 bool exclusive) {
  for (int64_t c = 0; c < w; c += kUnroll * kLanes) {
    const int64_t left = w - c;
    if (left >= kUnroll * kLanes) {
      if (exclusive)
        cummax_full_block<true>(x, y, n, stride, reverse, c);
      else
        cummax_full_block<false>(x, y, n, stride, reverse, c);
      continue;
    }
    const int vecs = int(left >= kUnroll * kLanes ? kUnroll : (left + kLanes - 1) / kLanes);
    cummax_block(x, y, n, stride, reverse, exclusive, c, vecs, lanes_below(left - (vecs - 1) * kLanes));
  }
}

void segment_max_cols(const float* x, float* y, int64_t n, int64_t w, int64_t stride, int64_t segment) {
  for (int64_t c = 0; c < w; c += kUnroll * kLanes) {
    const int64_t left = w - c;
    const int vecs = int(left >= kUnroll * kLanes ? kUnroll : (left + kLanes - 1) / kLanes);
    __mmask16 m[kUnroll];
    for (int v = 0; v < vecs; ++v) m[v] = v + 1 == vecs ? lanes_below(left - v * kLanes) : 0xffff;
    for (int64_t b = 0, e = 0, s = 0; b < n; b = e, ++s) {
      e = n - b < segment ? n : b + segment;  // ragged last segment; no b + segment overflow
      __m512 run[kUnroll];
      for (int v = 0; v < vecs; ++v) run[v] = _mm512_set1_ps(-__builtin_inff());
      for (int64_t i = b; i < e; ++i)
        for (int v = 0; v < vecs; ++v)
          run[v] = step(run[v], _mm512_maskz_loadu_ps(m[v], x + i * stride + c + v * kLanes));
      for (int v = 0; v < vecs; ++v) _mm512_mask_storeu_ps(y + s * stride + c + v * kLanes, m[v], run[v]);
    }
  }
}

}  // namespace

const ScanIsa kScanAvx512 = {&cummax_cols, &segment_max_cols};

}  // namespace longrun::cpu
