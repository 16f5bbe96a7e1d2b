// AVX-512 loops of the cpu spectral kernels (dct.h). A complex value (the a, b columns of
// one pair) is 64 bits, so the row <-> sequence copies are 8 x 8 transposes of doubles;
// the twiddle loops run along a sequence, 8 coefficients per vector.
#include <immintrin.h>

#include "cpu/dct.h"

// GCC 12's unmasked AVX-512 permutes, extracts and inserts pass an "undefined" vector as
// their pass-through operand, which -W(maybe-)uninitialized reports in every caller.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace longrun::cpu::dct_detail {
namespace {

__mmask16 first16(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1u);
}

// (a, b) -> (b, a) in every complex slot.
__m512 swap_pairs(__m512 v) { return _mm512_permute_ps(v, 0xB1); }

// Complex slots in reverse order: the Z[n-k] for k = k0..k0+7 loaded from n-k0-7..n-k0.
__m512 reverse_slots(__m512 v) {
  return _mm512_castpd_ps(
      _mm512_permutexvar_pd(_mm512_setr_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_castps_pd(v)));
}

// x * 0 + bad turns `bad` NaN exactly when some x is Inf or NaN.
__m512 flag_nonfinite(__m512 bad, __m512 v) { return _mm512_fmadd_ps(v, _mm512_setzero_ps(), bad); }

// r[i][p] -> r[p][i] for 8 x 8 complex values (three rounds of two-source permutes).
inline __attribute__((always_inline)) void transpose8(__m512d r[8]) {
  const __m512i lo1 = _mm512_setr_epi64(0, 8, 2, 10, 4, 12, 6, 14),
                hi1 = _mm512_setr_epi64(1, 9, 3, 11, 5, 13, 7, 15);
  const __m512i lo2 = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13),
                hi2 = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  const __m512i lo3 = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11),
                hi3 = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
  __m512d t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm512_permutex2var_pd(r[i], lo1, r[i + 1]);
    t[i + 1] = _mm512_permutex2var_pd(r[i], hi1, r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4)
    for (int h = 0; h < 2; ++h) {
      u[i + h] = _mm512_permutex2var_pd(t[i + h], lo2, t[i + h + 2]);
      u[i + h + 2] = _mm512_permutex2var_pd(t[i + h], hi2, t[i + h + 2]);
    }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_permutex2var_pd(u[i], lo3, u[i + 4]);
    r[i + 4] = _mm512_permutex2var_pd(u[i], hi3, u[i + 4]);
  }
}

// Prefetches the start of a row segment some rows ahead (segments are 2 KB or more apart,
// too far for the hardware prefetchers to link). Only up to 4 lines: more prefetches than
// the core has fill buffers stall the loop instead of helping, and the streamer follows a
// longer segment by itself.
void prefetch_row(const float* p, int64_t width) {
  const int64_t lines = width < 64 ? width : 64;
  for (int64_t c = 0; c < lines; c += 16) _mm_prefetch(reinterpret_cast<const char*>(p + c), _MM_HINT_T0);
}
constexpr int64_t kAheadRows = 32;

// Sequence position of row r: Makhoul's order puts even rows first, odd rows reversed.
int64_t position_of(int64_t r, int64_t rows, bool shuffled) {
  if (!shuffled) return r;
  return r % 2 == 0 ? r / 2 : rows - 1 - (r - 1) / 2;
}

// Rows are read and written in memory order. In Makhoul's order a tile of 16 rows from r0
// (a multiple of 16) splits into the 8 even rows, positions h..h+7 (h = r0/2), and the 8
// odd rows taken downwards from r0+15, positions rows-8-h..rows-1-h: two 8 x 8 transposes
// that each fill whole 64-byte runs of 8 sequences.
struct Tile {
  int64_t step;       // rows per tile
  int64_t row[2][8];  // row offsets (from r0) of the two 8-row halves; one half when !shuffled
  int halves;
};
Tile tile_of(bool shuffled) {
  Tile t{shuffled ? 16 : 8, {}, shuffled ? 2 : 1};
  for (int i = 0; i < 8; ++i) {
    t.row[0][i] = shuffled ? 2 * i : i;
    t.row[1][i] = 15 - 2 * i;
  }
  return t;
}
int64_t tile_position(int half, int64_t r0, int64_t rows, bool shuffled) {
  if (!shuffled) return r0;
  return half == 0 ? r0 / 2 : rows - 8 - r0 / 2;
}

bool rows_to_seq(const float* x, int64_t xs, int64_t rows, bool shuffled, int64_t width, float* seq,
                 int64_t ld) {
  __m512 bad = _mm512_setzero_ps();
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
      for (int64_t p0 = 0; p0 < pairs; p0 += 8) {
        const int64_t np = pairs - p0 < 8 ? pairs - p0 : 8;
        const __mmask16 cols = first16(width - 2 * p0);  // the odd pad column reads as 0
        __m512d r[8];
        for (int i = 0; i < 8; ++i) {
          const float* src = x + (r0 + t.row[half][i]) * xs + 2 * p0;
          const __m512 v = 2 * p0 + 16 <= width ? _mm512_loadu_ps(src) : _mm512_maskz_loadu_ps(cols, src);
          bad = flag_nonfinite(bad, v);
          r[i] = _mm512_castps_pd(v);
        }
        transpose8(r);
        for (int64_t q = 0; q < np; ++q) _mm512_storeu_pd(out + (p0 + q) * ld + pos, r[q]);
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
  return finite && _mm512_cmp_ps_mask(bad, bad, _CMP_UNORD_Q) == 0;
}

void seq_to_rows(const float* seq, int64_t ld, int64_t rows, bool shuffled, int64_t width, float* y,
                 int64_t ys) {
  const int64_t pairs = (width + 1) / 2;
  const double* in = reinterpret_cast<const double*>(seq);
  const Tile t = tile_of(shuffled);
  int64_t r0 = 0;
  for (; r0 + t.step <= rows; r0 += t.step) {
    // The lines are written whole soon: fetch them before the stores wait.
    for (int64_t i = r0 + kAheadRows; i < r0 + kAheadRows + t.step && i < rows; ++i)
      prefetch_row(y + i * ys, width);
    for (int half = 0; half < t.halves; ++half) {
      const int64_t pos = tile_position(half, r0, rows, shuffled);
      for (int64_t p0 = 0; p0 < pairs; p0 += 8) {
        const int64_t np = pairs - p0 < 8 ? pairs - p0 : 8;
        const __mmask16 cols = first16(width - 2 * p0);
        __m512d r[8];
        for (int q = 0; q < 8; ++q)
          r[q] = q < np ? _mm512_loadu_pd(in + (p0 + q) * ld + pos) : _mm512_setzero_pd();
        transpose8(r);
        for (int i = 0; i < 8; ++i) {
          float* dst = y + (r0 + t.row[half][i]) * ys + 2 * p0;
          if (2 * p0 + 16 <= width)
            _mm512_storeu_ps(dst, _mm512_castpd_ps(r[i]));
          else
            _mm512_mask_storeu_ps(dst, cols, _mm512_castpd_ps(r[i]));
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

// Lines (axis last): two lines a, b become one sequence. Shuffled, 16 floats of each line
// hold the even samples of positions j..j+7 and the odd ones of positions len-8-j..len-1-j
// (reversed): one two-source permute each.
bool lines_to_seq(const float* x, int64_t xls, int64_t lines, int64_t len, bool shuffled, float* seq,
                  int64_t ld) {
  const __m512i even = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
  const __m512i odd_down = _mm512_setr_epi32(15, 31, 13, 29, 11, 27, 9, 25, 7, 23, 5, 21, 3, 19, 1, 17);
  const __m512i interleave = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  __m512 bad = _mm512_setzero_ps();
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
      for (; 2 * j + 16 <= len; j += 8) {
        const __m512 va = _mm512_loadu_ps(a + 2 * j),
                     vb = b ? _mm512_loadu_ps(b + 2 * j) : _mm512_setzero_ps();
        bad = flag_nonfinite(flag_nonfinite(bad, va), vb);
        _mm512_storeu_ps(s + 2 * j, _mm512_permutex2var_ps(va, even, vb));
        _mm512_storeu_ps(s + 2 * (len - 8 - j), _mm512_permutex2var_ps(va, odd_down, vb));
      }
      for (int64_t e = j; e < (len + 1) / 2; ++e) put(e, 2 * e);
      for (int64_t o = j; o < len / 2; ++o) put(len - 1 - o, 2 * o + 1);
    } else {
      for (; j + 8 <= len; j += 8) {
        const __m512 va = _mm512_zextps256_ps512(_mm256_loadu_ps(a + j));
        const __m512 vb = b ? _mm512_zextps256_ps512(_mm256_loadu_ps(b + j)) : _mm512_setzero_ps();
        bad = flag_nonfinite(flag_nonfinite(bad, va), vb);
        _mm512_storeu_ps(s + 2 * j, _mm512_permutex2var_ps(va, interleave, vb));
      }
      for (; j < len; ++j) put(j, j);
    }
  }
  return finite && _mm512_cmp_ps_mask(bad, bad, _CMP_UNORD_Q) == 0;
}

// The inverse: shuffled, y[2j] = s[j] and y[2j+1] = s[len-1-j], 8 positions from each end.
void seq_to_lines(const float* seq, int64_t ld, int64_t len, bool shuffled, int64_t lines, float* y,
                  int64_t yls) {
  const __m512i split = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m512i merge_a = _mm512_setr_epi32(0, 30, 2, 28, 4, 26, 6, 24, 8, 22, 10, 20, 12, 18, 14, 16);
  const __m512i merge_b = _mm512_add_epi32(merge_a, _mm512_set1_epi32(1));
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
      for (; 2 * j + 16 <= len; j += 8) {
        const __m512 lo = _mm512_loadu_ps(s + 2 * j), hi = _mm512_loadu_ps(s + 2 * (len - 8 - j));
        _mm512_storeu_ps(a + 2 * j, _mm512_permutex2var_ps(lo, merge_a, hi));
        if (b) _mm512_storeu_ps(b + 2 * j, _mm512_permutex2var_ps(lo, merge_b, hi));
      }
      for (int64_t e = j; e < (len + 1) / 2; ++e) get(2 * e, e);
      for (int64_t o = j; o < len / 2; ++o) get(2 * o + 1, len - 1 - o);
    } else {
      for (; j + 8 <= len; j += 8) {
        const __m512 v = _mm512_permutexvar_ps(split, _mm512_loadu_ps(s + 2 * j));
        _mm256_storeu_ps(a + j, _mm512_castps512_ps256(v));
        if (b) _mm256_storeu_ps(b + j, _mm512_extractf32x8_ps(v, 1));
      }
      for (; j < len; ++j) get(j, j);
    }
  }
}

// DCT-II from the paired spectrum, Z = Z[k], W = Z[n-k] (a = re, b = im):
//   X_a = ca (Zr + Wr) + sb (Zi - Wi),   X_b = ca (Zi + Wi) + sb (Wr - Zr)
// i.e. ca·(Z + W) plus / minus sb·swap(Z - W) on even / odd lanes: one fmsubadd.
__m512 post_slots(__m512 z, __m512 w, __m512 ca, __m512 sb) {
  return _mm512_fmsubadd_ps(ca, _mm512_add_ps(z, w), _mm512_mul_ps(sb, swap_pairs(_mm512_sub_ps(z, w))));
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
    for (; k + 8 <= keep; k += 8) {  // k + 7 <= keep - 1 <= n - 1, so n - k - 7 >= 1
      const __m512 zv = _mm512_loadu_ps(z + 2 * k), wv = reverse_slots(_mm512_loadu_ps(z + 2 * (n - k - 7)));
      _mm512_storeu_ps(out + 2 * k,
                       post_slots(zv, wv, _mm512_loadu_ps(ca2 + 2 * k), _mm512_loadu_ps(sb2 + 2 * k)));
    }
    for (; k < keep; ++k) scalar(k);
  }
}

// DCT-III pre-twiddle z[k] = e^{i phi}(h_k X_k - i h X_{m-k}), R = X_k, S = X_{m-k}:
//   re = c1 Ra - s1 Rb + s2 Sa + c2 Sb,   im = c1 Rb + s1 Ra + s2 Sb - c2 Sa
// = fmaddsub(c1, R, s1·swap R) + fmsubadd(s2, S, c2·swap S).
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
    for (; k + 8 <= m; k += 8) {
      const __m512 r = _mm512_loadu_ps(in + 2 * k), s = reverse_slots(_mm512_loadu_ps(in + 2 * (m - k - 7)));
      const __m512 fr = _mm512_fmaddsub_ps(_mm512_loadu_ps(c1 + 2 * k), r,
                                           _mm512_mul_ps(_mm512_loadu_ps(s1 + 2 * k), swap_pairs(r)));
      const __m512 fs = _mm512_fmsubadd_ps(_mm512_loadu_ps(s2 + 2 * k), s,
                                           _mm512_mul_ps(_mm512_loadu_ps(c2 + 2 * k), swap_pairs(s)));
      _mm512_storeu_ps(out + 2 * k, _mm512_add_ps(fr, fs));
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
    for (; c + 16 <= 2 * len; c += 16) {
      const __m512 v = _mm512_loadu_ps(in + c);
      _mm512_storeu_ps(out + c, _mm512_fmaddsub_ps(v, _mm512_loadu_ps(tre2 + c),
                                                   _mm512_mul_ps(swap_pairs(v), _mm512_loadu_ps(tim2 + c))));
    }
    for (; c < 2 * len; c += 2) {
      const float xr = in[c], xi = in[c + 1];
      out[c] = xr * tre2[c] - xi * tim2[c];
      out[c + 1] = xi * tre2[c] + xr * tim2[c];
    }
    for (; c < 2 * len_out; ++c) out[c] = 0.0f;
  }
}

// An R x 32 tile of c = a·b: broadcast a, two vectors of b per depth step.
template <int R>
void gemm_rows(int64_t cols, int64_t depth, const float* a, int64_t lda, const float* b, int64_t ldb,
               float* c, int64_t ldc) {
  for (int64_t j = 0; j < cols; j += 32) {
    const __mmask16 m0 = first16(cols - j), m1 = first16(cols - j - 16);
    __m512 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t k = 0; k < depth; ++k) {
      const __m512 b0 = _mm512_maskz_loadu_ps(m0, b + k * ldb + j);
      const __m512 b1 = _mm512_maskz_loadu_ps(m1, b + k * ldb + j + 16);
      for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_set1_ps(a[r * lda + k]);
        acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
      }
    }
    for (int r = 0; r < R; ++r) {
      _mm512_mask_storeu_ps(c + r * ldc + j, m0, acc[r][0]);
      _mm512_mask_storeu_ps(c + r * ldc + j + 16, m1, acc[r][1]);
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

const DctLoops kDctLoopsAvx512{&rows_to_seq, &seq_to_rows, &lines_to_seq, &seq_to_lines,
                               &dct2_post,   &dct3_pre,    &cmul,         &gemm};

}  // namespace longrun::cpu::dct_detail
