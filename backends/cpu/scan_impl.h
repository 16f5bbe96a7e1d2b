// The column scans of cummax, cumsum and segment_max (contract in scan.h), written once
// against a vector struct V (vec_avx2.h / vec_avx512.h) and a register-block shape Cfg. Included only
// by scan_avx2.cpp / scan_avx512.cpp, which instantiate ScanKernels<Vec, Cfg>.
//
// Columns are independent, so how they are grouped into blocks never changes a bit: whole
// blocks of Cfg::kFull unmasked vectors (compile-time shape, so that the running values stay
// in registers; with a runtime vector count the compiler keeps them on the stack, a load
// and a store per vector and row), then the remaining columns in blocks of up to
// Cfg::kUnroll vectors, the last one under a lane mask. segment_max uses the same blocks,
// so only its last block pays for masked loads.
#pragma once

#include <cstdint>

#include "cpu/scan.h"

namespace longrun::cpu {
namespace {  // internal linkage: each ISA file owns its instantiations

template <class V, class Cfg>
struct ScanKernels {
  using T = typename V::T;
  using M = typename V::M;
  static constexpr int L = V::L;
  static constexpr int kFull = Cfg::kFull;
  static constexpr int kUnroll = Cfg::kUnroll;

  // The two running scans (contract in scan.h) differ only in how a step combines the run
  // with the next row and in what an exclusive scan stores before its first row.
  struct MaxOp {
    // The reference's max step: take v when v >= run or v is NaN; a NaN run is kept otherwise.
    static T step(T run, T v) { return V::blend(V::mask_or(V::ge(v, run), V::is_nan(v)), run, v); }
    static float empty() { return -__builtin_inff(); }
  };
  struct SumOp {
    static T step(T run, T v) { return V::add(run, v); }  // the in-order f32 sum of attrs.h
    static float empty() { return 0.0f; }
  };

  static int vectors_for(int64_t left) { return int(left >= kUnroll * L ? kUnroll : (left + L - 1) / L); }

  // Both scans start from the first row itself (max(-inf, v) = v for every v, NaN included;
  // a sum's first term is taken as is, so -0 stays -0), then step once per row.
  template <class Op, bool Exclusive>
  static void running_full_block(const float* x, float* y, int64_t n, int64_t stride, bool reverse,
                                 int64_t c) {
    T run[kFull];
    const int64_t step_rows = reverse ? -stride : stride;
    const int64_t first = (reverse ? n - 1 : 0) * stride + c;
    const float* xp = x + first;
    float* yp = y + first;
#pragma GCC unroll 16
    for (int v = 0; v < kFull; ++v) {
      run[v] = V::load(xp + v * L);
      V::store(yp + v * L, Exclusive ? V::set1(Op::empty()) : run[v]);
    }
    for (int64_t t = 1; t < n; ++t) {
      xp += step_rows;
      yp += step_rows;
#pragma GCC unroll 16
      for (int v = 0; v < kFull; ++v) {
        const T xv = V::load(xp + v * L);
        if constexpr (Exclusive) V::store(yp + v * L, run[v]);
        run[v] = Op::step(run[v], xv);
        if constexpr (!Exclusive) V::store(yp + v * L, run[v]);
      }
    }
  }

  template <class Op>
  static void running_cols(const float* x, float* y, int64_t n, int64_t w, int64_t stride, bool reverse,
                           bool exclusive) {
    if (n == 0) return;
    int64_t c = 0;
    for (; w - c >= kFull * L; c += kFull * L) {
      if (exclusive)
        running_full_block<Op, true>(x, y, n, stride, reverse, c);
      else
        running_full_block<Op, false>(x, y, n, stride, reverse, c);
    }
    const T empty = V::set1(Op::empty());
    for (; c < w; c += kUnroll * L) {
      const int vecs = vectors_for(w - c);
      T run[kUnroll];
      M m[kUnroll];
      for (int v = 0; v < vecs; ++v) m[v] = V::first_n(w - c - v * L);
      for (int64_t t = 0; t < n; ++t) {
        const int64_t row = (reverse ? n - 1 - t : t) * stride + c;
        for (int v = 0; v < vecs; ++v) {
          const T xv = V::load_n(x + row + v * L, m[v]);
          if (exclusive) V::store_n(y + row + v * L, m[v], t == 0 ? empty : run[v]);
          run[v] = t == 0 ? xv : Op::step(run[v], xv);
          if (!exclusive) V::store_n(y + row + v * L, m[v], run[v]);
        }
      }
    }
  }

  // The maxima of every segment over one block of kFull whole vectors of columns at c.
  static void segment_max_full_block(const float* x, float* y, int64_t n, int64_t stride, int64_t segment,
                                     int64_t c) {
    for (int64_t b = 0, e = 0, s = 0; b < n; b = e, ++s) {
      e = n - b < segment ? n : b + segment;  // ragged last segment; no b + segment overflow
      T run[kFull];
#pragma GCC unroll 16
      for (int v = 0; v < kFull; ++v) run[v] = V::set1(-__builtin_inff());
      for (int64_t i = b; i < e; ++i) {
        const float* xp = x + i * stride + c;
#pragma GCC unroll 16
        for (int v = 0; v < kFull; ++v) run[v] = MaxOp::step(run[v], V::load(xp + v * L));
      }
#pragma GCC unroll 16
      for (int v = 0; v < kFull; ++v) V::store(y + s * stride + c + v * L, run[v]);
    }
  }

  static void segment_max_cols(const float* x, float* y, int64_t n, int64_t w, int64_t stride,
                               int64_t segment) {
    int64_t c = 0;
    for (; w - c >= kFull * L; c += kFull * L) segment_max_full_block(x, y, n, stride, segment, c);
    for (; c < w; c += kUnroll * L) {
      const int vecs = vectors_for(w - c);
      M m[kUnroll];
      for (int v = 0; v < vecs; ++v) m[v] = V::first_n(w - c - v * L);
      for (int64_t b = 0, e = 0, s = 0; b < n; b = e, ++s) {
        e = n - b < segment ? n : b + segment;  // ragged last segment; no b + segment overflow
        T run[kUnroll];
        for (int v = 0; v < vecs; ++v) run[v] = V::set1(-__builtin_inff());
        for (int64_t i = b; i < e; ++i)
          for (int v = 0; v < vecs; ++v)
            run[v] = MaxOp::step(run[v], V::load_n(x + i * stride + c + v * L, m[v]));
        for (int v = 0; v < vecs; ++v) V::store_n(y + s * stride + c + v * L, m[v], run[v]);
      }
    }
  }

  static constexpr ScanIsa kTable = {&running_cols<MaxOp>, &running_cols<SumOp>, &segment_max_cols};
};

}  // namespace
}  // namespace longrun::cpu
