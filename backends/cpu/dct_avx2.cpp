// AVX2 (+FMA) loops of the cpu spectral kernels (dct.h), the twins of dct_avx512.cpp with
// 4 complex values per vector: 4 x 4 transposes of doubles, 4 coefficients per step.
#include <immintrin.h>

#include "cpu/dct.h"

namespace longrun::cpu::dct_detail {
namespace {

// Lanes [0, count) of 8 floats set (count clamped to [0, 8]).
__m256i first8(int64_t count) {
  const int c = count < 0 ? 0 : count > 8 ? 8 : int(count);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

__m256 swap_pairs(__m256 v) { return _mm256_permute_ps(v, 0xB1); }
__m256 reverse_slots(__m256 v) { return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0x1B)); }
__m256 flag_nonfinite(__m256 bad, __m256 v) { return _mm256_fmadd_ps(v, _mm256_setzero_ps(), bad); }

// r[i][p] -> r[p][i] for 4 x 4 complex values.
inline __attribute__((always_inline)) void transpose4(__m256d r[4]) {
  const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
  r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
  r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
  r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
  r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

// Prefetches the start (up to 4 lines) of a row segment some rows ahead (dct_avx512.cpp).
void prefetch_row(const float* p, int64_t width) {
  const int64_t lines = width < 64 ? width : 64;
  for (int64_t c = 0; c < lines; c += 16) _mm_prefetch(reinterpret_cast<const char*>(p + c), _MM_HINT_T0);
}
constexpr int64_t kAheadRows = 32;

int64_t position_of(int64_t r, int64_t rows, bool shuffled) {
  if (!shuffled) return r;
  return r % 2 == 0 ? r / 2 : rows - 1 - (r - 1) / 2;
}

// Rows in memory order; in Makhoul's order a tile of 8 rows from r0 splits into the even
// rows (positions h..h+3, h = r0/2) and the odd rows from r0+7 down (positions
// rows-4-h..rows-1-h): two 4 x 4 transposes (see dct_avx512.cpp).
struct Tile {
  int64_t step;
  int64_t row[2][4];
  int halves;
};
Tile tile_of(bool shuffled) {
  Tile t{shuffled ? 8 : 4, {}, shuffled ? 2 : 1};
  for (int i = 0; i < 4; ++i) {
    t.row[0][i] = shuffled ? 2 * i : i;
    t.row[1][i] = 7 - 2 * i;
  }
  return t;
}
int64_t tile_position(int half, int64_t r0, int64_t rows, bool shuffled) {
  if (!shuffled) return r0;
  return half == 0 ? r0 / 2 : rows - 4 - r0 / 2;
}

bool rows_to_seq(const float* x, int64_t xs, int64_t rows, bool shuffled, int64_t width, float* seq,
                 int64_t ld) {
  __m256 bad = _mm256_setzero_ps();
  bool finite = true;
  const int64_t pairs = (width + 1) / 2;
  double* out = reinterpret_cast<double*>(seq);
  const Tile t = tile_of(shuffled);
  int64_t r0 = 0;
  for (; r0 + t.step <= rows; r0 += t.step) {
    for (int64_t i = r0 + kAheadRows; i < r0 + kAheadRows + t.step && i < rows; ++i)
      prefetch_row(x + i * xs, width);
    for (int half = 0; half < t.halves; ++half) {
      const int64_t pos = tile_position(half, r0, rows, shuffled);
      for (int64_t p0 = 0; p0 < pairs; p0 += 4) {
        const int64_t np = pairs - p0 < 4 ? pairs - p0 : 4;
        const bool whole = width - 2 * p0 >= 8;
        const __m256i cols = first8(width - 2 * p0);  // the odd pad column reads as 0
        __m256d r[4];
        for (int i = 0; i < 4; ++i) {
          const float* src = x + (r0 + t.row[half][i]) * xs + 2 * p0;
          const __m256 v = whole ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, cols);
          bad = flag_nonfinite(bad, v);
          r[i] = _mm256_castps_pd(v);
        }
        transpose4(r);
        for (int64_t q = 0; q < np; ++q) _mm256_storeu_pd(out + (p0 + q) * ld + pos, r[q]);
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
  return finite && _mm256_movemask_ps(_mm256_cmp_ps(bad, bad, _CMP_UNORD_Q)) == 0;
}

void seq_to_rows(const float* seq, int64_t ld, int64_t rows, bool shuffled, int64_t width, float* y,
                 int64_t ys) {
  const int64_t pairs = (width + 1) / 2;
  const double* in = reinterpret_cast<const double*>(seq);
  const Tile t = tile_of(shuffled);
  int64_t r0 = 0;
  for (; r0 + t.step <= rows; r0 += t.step) {
    for (int64_t i = r0 + kAheadRows; i < r0 + kAheadRows + t.step && i < rows; ++i)
      prefetch_row(y + i * ys, width);
    for (int half = 0; half < t.halves; ++half) {
      const int64_t pos = tile_position(half, r0, rows, shuffled);
      for (int64_t p0 = 0; p0 < pairs; p0 += 4) {
        const int64_t np = pairs - p0 < 4 ? pairs - p0 : 4;
        const bool whole = width - 2 * p0 >= 8;
        const __m256i cols = first8(width - 2 * p0);
        __m256d r[4];
        for (int q = 0; q < 4; ++q)
          r[q] = q < np ? _mm256_loadu_pd(in + (p0 + q) * ld + pos) : _mm256_setzero_pd();
        transpose4(r);
        for (int i = 0; i < 4; ++i) {
          float* dst = y + (r0 + t.row[half][i]) * ys + 2 * p0;
          if (whole)
            _mm256_storeu_ps(dst, _mm256_castpd_ps(r[i]));
          else
            _mm256_maskstore_ps(dst, cols, _mm256_castpd_ps(r[i]));
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

// Lines (axis last): two lines a, b become one sequence (see dct_avx512.cpp); 8 floats of
// each line give positions j..j+3 (even samples) and len-4-j..len-1-j (odd, reversed).
bool lines_to_seq(const float* x, int64_t xls, int64_t lines, int64_t len, bool shuffled, float* seq,
                  int64_t ld) {
  __m256 bad = _mm256_setzero_ps();
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
      for (; 2 * j + 8 <= len; j += 4) {
        const __m256 va = _mm256_loadu_ps(a + 2 * j),
                     vb = b ? _mm256_loadu_ps(b + 2 * j) : _mm256_setzero_ps();
        bad = flag_nonfinite(flag_nonfinite(bad, va), vb);
        const __m256d lo = _mm256_castps_pd(_mm256_unpacklo_ps(va, vb));  // (a0 b0)(a1 b1) | (a4 b4)(a5 b5)
        const __m256d hi = _mm256_castps_pd(_mm256_unpackhi_ps(va, vb));  // (a2 b2)(a3 b3) | (a6 b6)(a7 b7)
        _mm256_storeu_pd(reinterpret_cast<double*>(s) + j, _mm256_shuffle_pd(lo, hi, 0x0));
        _mm256_storeu_pd(reinterpret_cast<double*>(s) + len - 4 - j,
                         _mm256_permute4x64_pd(_mm256_shuffle_pd(lo, hi, 0xF), 0x1B));
      }
      for (int64_t e = j; e < (len + 1) / 2; ++e) put(e, 2 * e);
      for (int64_t o = j; o < len / 2; ++o) put(len - 1 - o, 2 * o + 1);
    } else {
      for (; j + 4 <= len; j += 4) {
        const __m128 va = _mm_loadu_ps(a + j), vb = b ? _mm_loadu_ps(b + j) : _mm_setzero_ps();
        const __m256 v = _mm256_set_m128(_mm_unpackhi_ps(va, vb), _mm_unpacklo_ps(va, vb));
        bad = flag_nonfinite(bad, v);
        _mm256_storeu_ps(s + 2 * j, v);
      }
      for (; j < len; ++j) put(j, j);
    }
  }
  return finite && _mm256_movemask_ps(_mm256_cmp_ps(bad, bad, _CMP_UNORD_Q)) == 0;
}

void seq_to_lines(const float* seq, int64_t ld, int64_t len, bool shuffled, int64_t lines, float* y,
                  int64_t yls) {
  const __m256i split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  for (int64_t p = 0; 2 * p < lines; ++p) {
    float* a = y + 2 * p * yls;
    float* b = 2 * p + 1 < lines ? a + yls : nullptr;
    const float* s = seq + 2 * p * ld;
    auto get = [&](int64_t r, int64_t pos) {
      a[r] = s[2 * pos];
      if (b) b[r] = s[2 * pos + 1];
    };
    int64_t j = 0;
    if (shuffled) {  // y[2j] = s[j], y[2j+1] = s[len-1-j]
      for (; 2 * j + 8 <= len; j += 4) {
        const __m256 lo = _mm256_loadu_ps(s + 2 * j);
        const __m256 hi = _mm256_castpd_ps(
            _mm256_permute4x64_pd(_mm256_loadu_pd(reinterpret_cast<const double*>(s) + len - 4 - j), 0x1B));
        const __m256d u = _mm256_castps_pd(_mm256_unpacklo_ps(lo, hi)),
                      v = _mm256_castps_pd(_mm256_unpackhi_ps(lo, hi));
        _mm256_storeu_ps(a + 2 * j, _mm256_castpd_ps(_mm256_shuffle_pd(u, v, 0x0)));
        if (b) _mm256_storeu_ps(b + 2 * j, _mm256_castpd_ps(_mm256_shuffle_pd(u, v, 0xF)));
      }
      for (int64_t e = j; e < (len + 1) / 2; ++e) get(2 * e, e);
      for (int64_t o = j; o < len / 2; ++o) get(2 * o + 1, len - 1 - o);
    } else {
      for (; j + 4 <= len; j += 4) {
        const __m256 v = _mm256_permutevar8x32_ps(_mm256_loadu_ps(s + 2 * j), split);
        _mm_storeu_ps(a + j, _mm256_castps256_ps128(v));
        if (b) _mm_storeu_ps(b + j, _mm256_extractf128_ps(v, 1));
      }
      for (; j < len; ++j) get(j, j);
    }
  }
}

// X_a = ca (Zr + Wr) + sb (Zi - Wi), X_b = ca (Zi + Wi) + sb (Wr - Zr) (dct_avx512.cpp).
__m256 post_slots(__m256 z, __m256 w, __m256 ca, __m256 sb) {
  return _mm256_fmsubadd_ps(ca, _mm256_add_ps(z, w), _mm256_mul_ps(sb, swap_pairs(_mm256_sub_ps(z, w))));
}

void dct2_post(const float* w, int64_t ld, int64_t pairs, int64_t n, int64_t keep, const float* ca2,
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
    for (; k + 4 <= keep; k += 4) {
      const __m256 zv = _mm256_loadu_ps(z + 2 * k), wv = reverse_slots(_mm256_loadu_ps(z + 2 * (n - k - 3)));
      _mm256_storeu_ps(out + 2 * k,
                       post_slots(zv, wv, _mm256_loadu_ps(ca2 + 2 * k), _mm256_loadu_ps(sb2 + 2 * k)));
    }
    for (; k < keep; ++k) scalar(k);
  }
}

// fmaddsub(c1, R, s1·swap R) + fmsubadd(s2, S, c2·swap S) (dct_avx512.cpp).
void dct3_pre(const float* x, int64_t ld, int64_t pairs, int64_t m, const float* tw2, float* z) {
  const float *c1 = tw2, *s1 = tw2 + 2 * m, *c2 = tw2 + 4 * m, *s2 = tw2 + 6 * m;
  for (int64_t p = 0; p < pairs; ++p) {
    const float* in = x + 2 * p * ld;
    float* out = z + 2 * p * ld;
    auto scalar = [&](int64_t k) {
      const float ra = in[2 * k], rb = in[2 * k + 1];
      const float sa = k == 0 ? 0.0f : in[2 * (m - k)], sb = k == 0 ? 0.0f : in[2 * (m - k) + 1];  // X_m = 0
      out[2 * k] = c1[2 * k] * ra - s1[2 * k] * rb + s2[2 * k] * sa + c2[2 * k] * sb;
      out[2 * k + 1] = c1[2 * k] * rb + s1[2 * k] * ra + s2[2 * k] * sb - c2[2 * k] * sa;
    };
    scalar(0);
    int64_t k = 1;
    for (; k + 4 <= m; k += 4) {
      const __m256 r = _mm256_loadu_ps(in + 2 * k), s = reverse_slots(_mm256_loadu_ps(in + 2 * (m - k - 3)));
      const __m256 fr = _mm256_fmaddsub_ps(_mm256_loadu_ps(c1 + 2 * k), r,
                                           _mm256_mul_ps(_mm256_loadu_ps(s1 + 2 * k), swap_pairs(r)));
      const __m256 fs = _mm256_fmsubadd_ps(_mm256_loadu_ps(s2 + 2 * k), s,
                                           _mm256_mul_ps(_mm256_loadu_ps(c2 + 2 * k), swap_pairs(s)));
      _mm256_storeu_ps(out + 2 * k, _mm256_add_ps(fr, fs));
    }
    for (; k < m; ++k) scalar(k);
  }
}

// y = x · t per complex slot: fmaddsub(x, Re t, swap(x) · Im t).
void cmul(const float* x, int64_t ldx, int64_t pairs, int64_t len, const float* tre2, const float* tim2,
          float* y, int64_t ldy, int64_t len_out) {
  for (int64_t p = 0; p < pairs; ++p) {
    const float* in = x + 2 * p * ldx;
    float* out = y + 2 * p * ldy;
    int64_t c = 0;
    for (; c + 8 <= 2 * len; c += 8) {
      const __m256 v = _mm256_loadu_ps(in + c);
      _mm256_storeu_ps(out + c, _mm256_fmaddsub_ps(v, _mm256_loadu_ps(tre2 + c),
                                                   _mm256_mul_ps(swap_pairs(v), _mm256_loadu_ps(tim2 + c))));
    }
    for (; c < 2 * len; c += 2) {
      const float xr = in[c], xi = in[c + 1];
      out[c] = xr * tre2[c] - xi * tim2[c];
      out[c + 1] = xi * tre2[c] + xr * tim2[c];
    }
    for (; c < 2 * len_out; ++c) out[c] = 0.0f;
  }
}

// An R x 16 tile of c = a·b: broadcast a, two vectors of b per depth step.
template <int R>
void gemm_rows(int64_t cols, int64_t depth, const float* a, int64_t lda, const float* b, int64_t ldb,
               float* c, int64_t ldc) {
  for (int64_t j = 0; j < cols; j += 16) {
    const bool whole = cols - j >= 16;
    const __m256i m0 = first8(cols - j), m1 = first8(cols - j - 8);
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < depth; ++k) {
      const float* bk = b + k * ldb + j;
      const __m256 b0 = whole ? _mm256_loadu_ps(bk) : _mm256_maskload_ps(bk, m0);
      const __m256 b1 = whole ? _mm256_loadu_ps(bk + 8) : _mm256_maskload_ps(bk + 8, m1);
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
        acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
      }
    }
    for (int r = 0; r < R; ++r) {
      _mm256_maskstore_ps(c + r * ldc + j, m0, acc[r][0]);
      _mm256_maskstore_ps(c + r * ldc + j + 8, m1, acc[r][1]);
    }
  }
}

void gemm(int64_t rows, int64_t cols, int64_t depth, const float* a, int64_t lda, const float* b, int64_t ldb,
          float* c, int64_t ldc) {
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

}  // namespace

const DctLoops kDctLoopsAvx2{&rows_to_seq, &seq_to_rows, &lines_to_seq, &seq_to_lines,
                             &dct2_post,   &dct3_pre,    &cmul,         &gemm};

}  // namespace longrun::cpu::dct_detail
