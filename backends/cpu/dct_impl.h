// The vectorised inner loops of the spectral kernels (dct.h, DctLoops), written once
// against a vector struct V (vec_avx2.h / vec_avx512.h). A complex value (the a, b columns of
// one pair) is 64 bits, so V holds C = V::kSlots of them: the row <-> sequence copies are
// C x C transposes of doubles, and the twiddle loops run along a sequence, C coefficients
// per vector. Included only by dct_avx2.cpp / dct_avx512.cpp, which instantiate
// DctKernels<Vec>.
#pragma once

#include <cstdint>

#include "cpu/dct.h"
#include "cpu/dct_columns_impl.h"

namespace longrun::cpu::dct_detail {
namespace {  // internal linkage: each ISA file owns its instantiations

template <class V>
struct DctKernels {
  using T = typename V::T;
  using M = typename V::M;
  static constexpr int L = V::L;
  static constexpr int C = V::kSlots;

  // x * 0 + bad turns `bad` NaN exactly when some x is Inf or NaN.
  static T flag_nonfinite(T bad, T v) { return V::fmadd(v, V::zero(), bad); }
  static bool all_finite(T bad) { return !V::any(V::is_nan(bad)); }

  // Prefetches the start of a row segment some rows ahead (segments are 2 KB or more apart,
  // too far for the hardware prefetchers to link). Only up to 4 lines: more prefetches than
  // the core has fill buffers stall the loop instead of helping, and the streamer follows a
  // longer segment by itself.
  static void prefetch_row(const float* p, int64_t width) {
    const int64_t lines = width < 64 ? width : 64;
    for (int64_t c = 0; c < lines; c += 16) V::prefetch(p + c);
  }
  static constexpr int64_t kAheadRows = 32;

  // Sequence position of row r: Makhoul's order puts even rows first, odd rows reversed.
  static int64_t position_of(int64_t r, int64_t rows, bool shuffled) {
    if (!shuffled) return r;
    return r % 2 == 0 ? r / 2 : rows - 1 - (r - 1) / 2;
  }

  // Rows are read and written in memory order. In Makhoul's order a tile of 2C rows from r0
  // (a multiple of 2C) splits into the C even rows, positions h..h+C-1 (h = r0/2), and the C
  // odd rows taken downwards from r0+2C-1, positions rows-C-h..rows-1-h: two C x C
  // transposes that each fill whole runs of C sequences.
  struct Tile {
    int64_t step;       // rows per tile
    int64_t row[2][C];  // row offsets (from r0) of the two C-row halves; one half when !shuffled
    int halves;
  };
  static Tile tile_of(bool shuffled) {
    Tile t{shuffled ? 2 * C : C, {}, shuffled ? 2 : 1};
    for (int i = 0; i < C; ++i) {
      t.row[0][i] = shuffled ? 2 * i : i;
      t.row[1][i] = 2 * C - 1 - 2 * i;
    }
    return t;
  }
  static int64_t tile_position(int half, int64_t r0, int64_t rows, bool shuffled) {
    if (!shuffled) return r0;
    return half == 0 ? r0 / 2 : rows - C - r0 / 2;
  }

  static bool rows_to_seq(const float* x, int64_t xs, int64_t rows, bool shuffled, int64_t width, float* seq,
                          int64_t ld) {
    T bad = V::zero();
    bool finite = true;
    const int64_t pairs = (width + 1) / 2;
    const Tile t = tile_of(shuffled);
    int64_t r0 = 0;
    for (; r0 + t.step <= rows; r0 += t.step) {
      for (int64_t i = r0 + kAheadRows; i < r0 + kAheadRows + t.step && i < rows; ++i)
        prefetch_row(x + i * xs, width);
      for (int half = 0; half < t.halves; ++half) {
        const int64_t pos = tile_position(half, r0, rows, shuffled);
        for (int64_t p0 = 0; p0 < pairs; p0 += C) {
          const int64_t np = pairs - p0 < C ? pairs - p0 : C;
          const bool whole = width - 2 * p0 >= L;
          const M cols = V::first_n_any(width - 2 * p0);  // the odd pad column reads as 0
          T r[C];
          for (int i = 0; i < C; ++i) {
            const float* src = x + (r0 + t.row[half][i]) * xs + 2 * p0;
            r[i] = whole ? V::load(src) : V::load_n(src, cols);
            bad = flag_nonfinite(bad, r[i]);
          }
          V::transpose_slots(r);
          for (int64_t q = 0; q < np; ++q) V::store(seq + 2 * ((p0 + q) * ld + pos), r[q]);
        }
      }
    }
    for (; r0 < rows; ++r0) {
      const float* src = x + r0 * xs;
      const int64_t j = position_of(r0, rows, shuffled);
      for (int64_t p = 0; p < pairs; ++p) {
        const float a = src[2 * p], b = 2 * p + 1 < width ? src[2 * p + 1] : 0.0f;
        finite = finite && (a - a == 0.0f) && (b - b == 0.0f);
        seq[2 * (p * ld + j)] = a;
        seq[2 * (p * ld + j) + 1] = b;
      }
    }
    return finite && all_finite(bad);
  }

  static void seq_to_rows(const float* seq, int64_t ld, int64_t rows, bool shuffled, int64_t width, float* y,
                          int64_t ys) {
    const int64_t pairs = (width + 1) / 2;
    const Tile t = tile_of(shuffled);
    int64_t r0 = 0;
    for (; r0 + t.step <= rows; r0 += t.step) {
      // The lines are written whole soon: fetch them before the stores wait.
      for (int64_t i = r0 + kAheadRows; i < r0 + kAheadRows + t.step && i < rows; ++i)
        prefetch_row(y + i * ys, width);
      for (int half = 0; half < t.halves; ++half) {
        const int64_t pos = tile_position(half, r0, rows, shuffled);
        for (int64_t p0 = 0; p0 < pairs; p0 += C) {
          const int64_t np = pairs - p0 < C ? pairs - p0 : C;
          const bool whole = width - 2 * p0 >= L;
          const M cols = V::first_n_any(width - 2 * p0);
          T r[C];
          for (int q = 0; q < C; ++q) r[q] = q < np ? V::load(seq + 2 * ((p0 + q) * ld + pos)) : V::zero();
          V::transpose_slots(r);
          for (int i = 0; i < C; ++i) {
            float* dst = y + (r0 + t.row[half][i]) * ys + 2 * p0;
            if (whole)
              V::store(dst, r[i]);
            else
              V::store_n(dst, cols, r[i]);
          }
        }
      }
    }
    for (; r0 < rows; ++r0) {
      float* dst = y + r0 * ys;
      const int64_t j = position_of(r0, rows, shuffled);
      for (int64_t p = 0; p < pairs; ++p) {
        dst[2 * p] = seq[2 * (p * ld + j)];
        if (2 * p + 1 < width) dst[2 * p + 1] = seq[2 * (p * ld + j) + 1];
      }
    }
  }

  // Lines (axis last): two lines a, b become one sequence. Shuffled, L floats of each line
  // hold the even samples of positions j..j+C-1 and the odd ones of positions
  // len-C-j..len-1-j (reversed).
  static bool lines_to_seq(const float* x, int64_t xls, int64_t lines, int64_t len, bool shuffled, float* seq,
                           int64_t ld) {
    T bad = V::zero();
    bool finite = true;
    for (int64_t p = 0; 2 * p < lines; ++p) {
      const float* a = x + 2 * p * xls;
      const float* b = 2 * p + 1 < lines ? a + xls : nullptr;  // a missing partner reads as 0
      float* s = seq + 2 * p * ld;
      auto put = [&](int64_t pos, int64_t r) {
        const float va = a[r], vb = b ? b[r] : 0.0f;
        finite = finite && (va - va == 0.0f) && (vb - vb == 0.0f);
        s[2 * pos] = va;
        s[2 * pos + 1] = vb;
      };
      int64_t j = 0;
      if (shuffled) {
        for (; 2 * j + L <= len; j += C) {
          const T va = V::load(a + 2 * j), vb = b ? V::load(b + 2 * j) : V::zero();
          bad = flag_nonfinite(flag_nonfinite(bad, va), vb);
          T even, odd_down;
          V::zip_shuffled(va, vb, even, odd_down);
          V::store(s + 2 * j, even);
          V::store(s + 2 * (len - C - j), odd_down);
        }
        for (int64_t e = j; e < (len + 1) / 2; ++e) put(e, 2 * e);
        for (int64_t o = j; o < len / 2; ++o) put(len - 1 - o, 2 * o + 1);
      } else {
        for (; j + C <= len; j += C) {
          const T v = V::zip_halves(a + j, b ? b + j : nullptr);
          bad = flag_nonfinite(bad, v);
          V::store(s + 2 * j, v);
        }
        for (; j < len; ++j) put(j, j);
      }
    }
    return finite && all_finite(bad);
  }

  // The inverse: shuffled, y[2j] = s[j] and y[2j+1] = s[len-1-j], C positions from each end.
  static void seq_to_lines(const float* seq, int64_t ld, int64_t len, bool shuffled, int64_t lines, float* y,
                           int64_t yls) {
    for (int64_t p = 0; 2 * p < lines; ++p) {
      float* a = y + 2 * p * yls;
      float* b = 2 * p + 1 < lines ? a + yls : nullptr;
      const float* s = seq + 2 * p * ld;
      auto get = [&](int64_t r, int64_t pos) {
        a[r] = s[2 * pos];
        if (b) b[r] = s[2 * pos + 1];
      };
      int64_t j = 0;
      if (shuffled) {
        for (; 2 * j + L <= len; j += C) {
          T ya, yb;
          V::unzip_shuffled(V::load(s + 2 * j), V::load(s + 2 * (len - C - j)), ya, yb);
          V::store(a + 2 * j, ya);
          if (b) V::store(b + 2 * j, yb);
        }
        for (int64_t e = j; e < (len + 1) / 2; ++e) get(2 * e, e);
        for (int64_t o = j; o < len / 2; ++o) get(2 * o + 1, len - 1 - o);
      } else {
        for (; j + C <= len; j += C) V::unzip_halves(V::load(s + 2 * j), a + j, b ? b + j : nullptr);
        for (; j < len; ++j) get(j, j);
      }
    }
  }

  // DCT-II from the paired spectrum, Z = Z[k], W = Z[n-k] (a = re, b = im):
  //   X_a = ca (Zr + Wr) + sb (Zi - Wi),   X_b = ca (Zi + Wi) + sb (Wr - Zr)
  // i.e. ca·(Z + W) plus / minus sb·swap(Z - W) on even / odd lanes: one fmsubadd.
  static T post_slots(T z, T w, T ca, T sb) {
    return V::fmsubadd(ca, V::add(z, w), V::mul(sb, V::swap_pairs(V::sub(z, w))));
  }

  static void dct2_post(const float* w, int64_t ld, int64_t pairs, int64_t n, int64_t keep, const float* ca2,
                        const float* sb2, float* x) {
    for (int64_t p = 0; p < pairs; ++p) {
      const float* z = w + 2 * p * ld;
      float* out = x + 2 * p * ld;
      auto scalar = [&](int64_t k) {
        const int64_t q = k == 0 ? 0 : n - k;
        const float zr = z[2 * k], zi = z[2 * k + 1], wr = z[2 * q], wi = z[2 * q + 1];
        const float ca = ca2[2 * k], sb = sb2[2 * k];
        out[2 * k] = ca * (zr + wr) + sb * (zi - wi);
        out[2 * k + 1] = ca * (zi + wi) + sb * (wr - zr);
      };
      scalar(0);
      int64_t k = 1;
      for (; k + C <= keep; k += C) {  // k + C - 1 <= keep - 1 <= n - 1, so n - k - (C - 1) >= 1
        const T zv = V::load(z + 2 * k), wv = V::reverse_slots(V::load(z + 2 * (n - k - (C - 1))));
        V::store(out + 2 * k, post_slots(zv, wv, V::load(ca2 + 2 * k), V::load(sb2 + 2 * k)));
      }
      for (; k < keep; ++k) scalar(k);
    }
  }

  // DCT-III pre-twiddle z[k] = e^{i phi}(h_k X_k - i h X_{m-k}), R = X_k, S = X_{m-k}:
  //   re = c1 Ra - s1 Rb + s2 Sa + c2 Sb,   im = c1 Rb + s1 Ra + s2 Sb - c2 Sa
  // = fmaddsub(c1, R, s1·swap R) + fmsubadd(s2, S, c2·swap S).
  static void dct3_pre(const float* x, int64_t ld, int64_t pairs, int64_t m, const float* tw2, float* z) {
    const float *c1 = tw2, *s1 = tw2 + 2 * m, *c2 = tw2 + 4 * m, *s2 = tw2 + 6 * m;
    for (int64_t p = 0; p < pairs; ++p) {
      const float* in = x + 2 * p * ld;
      float* out = z + 2 * p * ld;
      auto scalar = [&](int64_t k) {
        const float ra = in[2 * k], rb = in[2 * k + 1];
        const float sa = k == 0 ? 0.0f : in[2 * (m - k)],
                    sb = k == 0 ? 0.0f : in[2 * (m - k) + 1];  // X_m = 0
        out[2 * k] = c1[2 * k] * ra - s1[2 * k] * rb + s2[2 * k] * sa + c2[2 * k] * sb;
        out[2 * k + 1] = c1[2 * k] * rb + s1[2 * k] * ra + s2[2 * k] * sb - c2[2 * k] * sa;
      };
      scalar(0);
      int64_t k = 1;
      for (; k + C <= m; k += C) {
        const T r = V::load(in + 2 * k), s = V::reverse_slots(V::load(in + 2 * (m - k - (C - 1))));
        const T fr = V::fmaddsub(V::load(c1 + 2 * k), r, V::mul(V::load(s1 + 2 * k), V::swap_pairs(r)));
        const T fs = V::fmsubadd(V::load(s2 + 2 * k), s, V::mul(V::load(c2 + 2 * k), V::swap_pairs(s)));
        V::store(out + 2 * k, V::add(fr, fs));
      }
      for (; k < m; ++k) scalar(k);
    }
  }

  // y = x · t per complex slot: fmaddsub(x, Re t, swap(x) · Im t).
  static void cmul(const float* x, int64_t ldx, int64_t pairs, int64_t len, const float* tre2,
                   const float* tim2, float* y, int64_t ldy, int64_t len_out) {
    for (int64_t p = 0; p < pairs; ++p) {
      const float* in = x + 2 * p * ldx;
      float* out = y + 2 * p * ldy;
      int64_t c = 0;
      for (; c + L <= 2 * len; c += L) {
        const T v = V::load(in + c);
        V::store(out + c, V::fmaddsub(v, V::load(tre2 + c), V::mul(V::swap_pairs(v), V::load(tim2 + c))));
      }
      for (; c < 2 * len; c += 2) {
        const float xr = in[c], xi = in[c + 1];
        out[c] = xr * tre2[c] - xi * tim2[c];
        out[c + 1] = xi * tre2[c] + xr * tim2[c];
      }
      for (; c < 2 * len_out; ++c) out[c] = 0.0f;
    }
  }

  // An R x 2L tile of c = a·b: broadcast a, two vectors of b per depth step.
  template <int R>
  static void gemm_rows(int64_t cols, int64_t depth, const float* a, int64_t lda, const float* b, int64_t ldb,
                        float* c, int64_t ldc) {
    for (int64_t j = 0; j < cols; j += 2 * L) {
      const bool whole = cols - j >= 2 * L;
      const M m0 = V::first_n_any(cols - j), m1 = V::first_n_any(cols - j - L);
      T acc[R][2];
      for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = V::zero();
      for (int64_t k = 0; k < depth; ++k) {
        const float* bk = b + k * ldb + j;
        const T b0 = V::load_part(bk, m0, whole);
        const T b1 = V::load_part(bk + L, m1, whole);
        for (int r = 0; r < R; ++r) {
          const T av = V::set1(a[r * lda + k]);
          acc[r][0] = V::fmadd(av, b0, acc[r][0]);
          acc[r][1] = V::fmadd(av, b1, acc[r][1]);
        }
      }
      for (int r = 0; r < R; ++r) {
        V::store_n(c + r * ldc + j, m0, acc[r][0]);
        V::store_n(c + r * ldc + j + L, m1, acc[r][1]);
      }
    }
  }

  static void gemm(int64_t rows, int64_t cols, int64_t depth, const float* a, int64_t lda, const float* b,
                   int64_t ldb, float* c, int64_t ldc) {
    int64_t r = 0;
    for (; r + 6 <= rows; r += 6) gemm_rows<6>(cols, depth, a + r * lda, lda, b, ldb, c + r * ldc, ldc);
    switch (rows - r) {
      case 5: gemm_rows<5>(cols, depth, a + r * lda, lda, b, ldb, c + r * ldc, ldc); break;
      case 4: gemm_rows<4>(cols, depth, a + r * lda, lda, b, ldb, c + r * ldc, ldc); break;
      case 3: gemm_rows<3>(cols, depth, a + r * lda, lda, b, ldb, c + r * ldc, ldc); break;
      case 2: gemm_rows<2>(cols, depth, a + r * lda, lda, b, ldb, c + r * ldc, ldc); break;
      case 1: gemm_rows<1>(cols, depth, a + r * lda, lda, b, ldb, c + r * ldc, ldc); break;
      default: break;
    }
  }

  static constexpr DctLoops kTable{&rows_to_seq,  &seq_to_rows, &lines_to_seq,
                                   &seq_to_lines, &dct2_post,   &dct3_pre,
                                   &cmul,         &gemm,        &ColumnKernels<V>::run};
};

}  // namespace
}  // namespace longrun::cpu::dct_detail
