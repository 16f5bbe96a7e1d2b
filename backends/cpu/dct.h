// The cpu backend's spectral kernels: dct (orthonormal DCT-II), idct (DCT-III) and
// spectral_filter (idct_M(dct_N(x)[:M])), for f32 along any axis (docs/models.md#spectral-filter).
//
// Two routes (docs/cpu-kernels.md): power-of-two lengths >= 16 along a non-last axis with
// >= 16 columns take the column route (ColumnPlan below: FFTs vectorised across columns, no
// FFTW, no pairing); everything else takes the sequence route described here.
// Method (Makhoul's FFT shuffle, batched over columns): the tensor is seen as
// [outer, N, inner]; a block of up to 64-256 adjacent columns is transformed at once. Two
// real columns a, b travel as one complex sequence a + i·b. The block is copied into
// contiguous sequences (8 x 8 complex transposes, the even/odd shuffle fused into the row
// order); FFTW transforms them out of place with one "many" plan per sub-block that stays
// in L2 (FFTW runs contiguous sequences several times faster than strided ones; lengths
// with a prime factor > 13 go through Bluestein); the twiddle, the split of
// the paired spectra and the orthonormal scale run along each sequence; a transposing copy
// writes the rows back. Axis last (inner = 1) reads and writes contiguous lines directly;
// 1 < inner < 16 flattens [outer, inner] into columns through staging rows.
// spectral_filter computes only the first M DCT-II outputs and an M-point inverse, or
// applies the cached M x N operator R as a matrix product when the cost model says that is
// cheaper (short transforms).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/host/host_executor.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu {

namespace dct_detail {

// The vectorised inner loops, one table per ISA (dct_avx2.cpp, dct_avx512.cpp). A block
// of `width` columns (pairs a/b interleaved in rows) has ceil(width/2) complex sequences,
// sequence p at seq + 2·p·ld floats. Every loop's result per element is independent of how
// blocks are spread over threads.
struct ColumnPlan;

struct DctLoops {
  // seq[p][j] = (x[row(j)][2p], x[row(j)][2p+1]) for j < rows, row(j) = j or, `shuffled`,
  // Makhoul's order (v[j] = x[2j], v[rows-1-j] = x[2j+1]); a missing odd column reads as 0.
  // Returns false when x holds Inf or NaN (the caller then unpairs the columns).
  bool (*rows_to_seq)(const float* x, int64_t x_row_stride, int64_t rows, bool shuffled, int64_t width,
                      float* seq, int64_t ld);
  // The inverse copy: y[row(j)][2p..2p+1] = seq[p][j] (only `width` columns written).
  void (*seq_to_rows)(const float* seq, int64_t ld, int64_t rows, bool shuffled, int64_t width, float* y,
                      int64_t y_row_stride);
  // The same copies for contiguous lines (the transformed axis is the last one): line c of
  // x at x + c·line_stride, seq[p][j] = (x[2p][row(j)], x[2p+1][row(j)]), j < len.
  bool (*lines_to_seq)(const float* x, int64_t line_stride, int64_t lines, int64_t len, bool shuffled,
                       float* seq, int64_t ld);
  void (*seq_to_lines)(const float* seq, int64_t ld, int64_t len, bool shuffled, int64_t lines, float* y,
                       int64_t line_stride);
  // DCT-II coefficients k < keep from the paired length-n spectra w (see dct_avx512.cpp),
  // per-slot constants ca2[2k] = ca2[2k+1] = c_k/2 cos(pi k/2n), sb2 likewise with sin.
  void (*dct2_post)(const float* w, int64_t ld, int64_t pairs, int64_t n, int64_t keep, const float* ca2,
                    const float* sb2, float* x);
  // The DCT-III pre-twiddle of length m: z[k] = e^{i pi k/2m}(h_k X_k - i h X_{m-k}) for both
  // columns of a pair, x zero-padded to m; tw2 = four per-slot tables of 2m floats
  // {h_k cos, h_k sin, h cos, h sin}.
  void (*dct3_pre)(const float* x, int64_t ld, int64_t pairs, int64_t m, const float* tw2, float* z);
  // y[p][k] = x[p][k] · t_k (complex) for k < len, 0 for len <= k < len_out; t as per-slot
  // tables tre2 / tim2 of 2·len floats. In place (x == y, same ld) is allowed.
  void (*cmul)(const float* x, int64_t ldx, int64_t pairs, int64_t len, const float* tre2, const float* tim2,
               float* y, int64_t ldy, int64_t len_out);
  // c[rows x cols] = a[rows x depth] · b[depth x cols], row-major, each element a single
  // ascending FMA chain over depth (so results do not depend on the tiling).
  void (*gemm)(int64_t rows, int64_t cols, int64_t depth, const float* a, int64_t lda, const float* b,
               int64_t ldb, float* c, int64_t ldc);
  // The column route (dct_columns_impl.h): one block of `width` columns of x [plan.rows_in
  // rows, stride xs] to y [plan.rows_out rows, stride ys]; `work` holds
  // column_work_floats(plan, width) floats, 64-byte aligned.
  void (*columns)(const ColumnPlan& plan, const float* x, int64_t xs, float* y, int64_t ys, int64_t width,
                  float* work);
};

extern const DctLoops kDctLoopsAvx2;
extern const DctLoops kDctLoopsAvx512;

// A batched complex DFT of one length (dct_fft.cpp): `pairs` sequences `ld` complex apart,
// out of place, sign as FFTW's (-1 forward, +1 backward, unnormalised). FFTW directly, or
// Bluestein through power-of-two FFTs where FFTW is slow (a prime factor > 13).
struct SequenceDft;
int64_t bluestein_length(int64_t n);  // 0: FFTW directly
// `pair_counts`: every batch size that will be run (plans are made for each).
Result<std::shared_ptr<const SequenceDft>> make_sequence_dft(int64_t n, int sign, int64_t ld,
                                                             std::span<const int64_t> pair_counts);
int64_t sequence_dft_work_floats(const SequenceDft& dft, int64_t pairs);  // scratch per run
// `in` is clobbered; `work` holds sequence_dft_work_floats(dft, pairs) floats, 64-byte aligned.
void run_sequence_dft(const SequenceDft& dft, const DctLoops& loops, float* in, float* out, int64_t pairs,
                      float* work);

// The column route for power-of-two lengths (dct_columns.cpp, dct_columns_impl.h): a block
// of up to 64 adjacent columns is transformed in place along its rows, vectors across
// columns, so no column is ever paired with another and no transpose is needed. A real
// column of length n = 2h travels as the complex sequence z_j = v_2j + i v_2j+1 (v the
// Makhoul-shuffled column; the shuffle is folded into the first FFT pass's loads) through a
// radix-8 / radix-4 Stockham FFT of length h; the split into the real spectrum and the DCT
// twiddle run in one pass that writes the output rows (with the FFT's last pass where that is
// a radix-2 one and every output is kept). The DCT-III runs the same steps backwards, the
// pre-twiddle in a pass before the FFT (with the FFT's first pass, radix 2, at n = 2048) and
// the unshuffle in its last pass.
struct ColumnPlan {
  bool inverse = false;    // DCT-III
  int64_t n = 0;           // transform length, a power of two >= kColumnMinLength
  int64_t rows_in = 0;     // DCT-II: n; DCT-III: input coefficients used (<= n)
  int64_t rows_out = 0;    // DCT-II: coefficients kept (<= n); DCT-III: n
  std::vector<float> fft;  // per radix-8 / radix-4 pass, per butterfly: w^t for t = 1 .. r-1 (re, im)
  // DCT-III with h = n/2 = 2 * 8^m from 1024, where a block of one AVX-512 vector takes no copy
  // pass (so n = 2048): the twiddles of the length-h/2 passes that follow a first radix-2 pass
  // (as `fft`); empty otherwise (dct_columns_impl.h, pre_radix2).
  std::vector<float> fft_half;
  std::vector<float> edge;  // DCT-II: 4 per k < n/2; DCT-III: 6 per k < n/2
  // The two-step FFT (kColumnTwoStepFrom <= n <= kColumnTwoStepUpTo): h = n/2 = split *
  // (h / split); `fft1` and `fft2` are the twiddles of the length-split and length-(h / split)
  // FFTs (as `fft`); cross[j2][k1] = w^{j2 k1} (re, im), j2 < h / split, k1 < split, w =
  // e^{-+2 pi i/h}.
  int64_t split = 0;  // 0: the length-h FFT runs as whole-buffer passes
  std::vector<float> fft1, fft2, cross;
  // DCT-II: position t of Makhoul's shuffled column is row shuffled[t] (2t for 2t < n, else
  // 2(n - 1 - t) + 1). A table, not that expression at each row visit: the FFT's first pass
  // reads 16 rows per butterfly and column vector, and a load is cheaper than the compare and
  // select. The DCT-III's last pass, which writes those rows, keeps the expression
  // (dct_columns_impl.h, shuffled_source): its address arithmetic hides behind the stores.
  std::vector<int32_t> shuffled;
};
inline constexpr int64_t kColumnMinLength = 16;
// At these lengths the column route's FFT runs in place as two steps of short FFTs (h =
// n1 * n2: n2 FFTs of length n1 over elements n2 apart, a twiddle, n1 FFTs of length n2 over
// adjacent elements) instead of log8(h) passes over two whole buffers: half the buffer
// traffic, one buffer (1 MiB at 64 columns) instead of two. It pays only where that buffer
// fits one core's L2 (column_two_step) and the whole-buffer passes do not: at n = 2048 the
// two buffers already fit and the extra twiddle pass costs more than it saves, and at 8192 the
// buffer no longer fits a 1-2 MiB L2. Hence n = 4096 only.
inline constexpr int64_t kColumnTwoStepFrom = 4096;
inline constexpr int64_t kColumnTwoStepUpTo = 4096;
// The L2 size that rule compares with: l2_cache_bytes() (cpu_isa.h) unless a test sets it.
int64_t& column_two_step_l2_bytes();
bool column_two_step(int64_t n);  // whether a plan of length n takes the two-step FFT
// The radix of the FFT pass on sub-sequences of length len (a power of two > 1): 8 while
// len >= 8, so a length-2048 FFT is 8, 8, 8, 4 (four passes through L2, not six); then 4 or 2.
constexpr int64_t column_fft_radix(int64_t len) { return len >= 8 ? 8 : len; }
// Whether those passes end in a radix-2 one (len = 16, 128, 1024, ...: 2 * 8^m).
constexpr bool column_fft_ends_in_radix2(int64_t len) {
  while (len >= 8) len /= column_fft_radix(len);
  return len == 2;
}
// From this FFT buffer size (bytes; n >= 4096 with 64 columns) the DCT-II gathers its
// shuffled input rows into the first buffer in one sequential pass before the FFT, and the
// DCT-III writes its FFT result to scratch and scatters it to the unshuffled rows after,
// instead of the first / last FFT pass touching 16 rows a megabyte or more apart per
// butterfly: those rows cross a page per load, which the hardware prefetchers do not
// follow, while the sequential copy pass can fetch ahead (dct_columns_impl.h). Below 1 MiB
// the buffers stay in L2 and the extra pass would only add work.
inline constexpr int64_t kColumnCopyPassBytes = 1024 * 1024;
// Whether a length-2h transform of blocks of `padded` columns (whole vectors) takes that pass.
constexpr bool column_copy_pass(int64_t h, int64_t padded) {
  return 2 * h * padded * int64_t(sizeof(float)) >= kColumnCopyPassBytes;
}
bool column_route_fits(int64_t n);  // a power of two >= kColumnMinLength
std::shared_ptr<const ColumnPlan> make_column_plan(bool inverse, int64_t n, int64_t rows_in,
                                                   int64_t rows_out);
int64_t column_work_floats(const ColumnPlan& plan, int64_t width);
// One FFT buffer (n/2 complex elements of `padded` columns each) pads one cache line after
// every 16 elements: a Stockham pass reads elements h/8 apart, and without the pad those
// strides are multiples of 4 KiB, so a butterfly's 8 rows share one L1 set (8-way on many cores)
// and evict each other.
inline constexpr int64_t kColumnPadFloats = 16;
inline int64_t column_buffer_floats(int64_t n, int64_t padded) {
  return n * padded + (n / 32 + 1) * kColumnPadFloats;
}
// Columns per block: 64 while the two FFT buffers stay within 4 MB (n <= 8192), fewer beyond.
int64_t column_block_width(int64_t n);
// Columns per block of a DCT-II / DCT-III column plan: column_block_width(n), but half that in
// the two-step range when one core's L2 cannot hold the two-step buffer (column_two_step
// false). Never the thread count: a column's bits depend on its block's width.
int64_t column_plan_width(int64_t n);

// The spectral filter's operator R [m x n] (or its transpose [n x m]) built in double, shared
// by every node of the same (n, m) while one holds it.
std::shared_ptr<const std::vector<float>> filter_matrix(int64_t n, int64_t m, bool transposed);

}  // namespace dct_detail

// Prepare steps (ISA independent): FFTW plans from a process-wide cache, twiddle tables,
// per-chunk scratch, the cost-model choice and the cached operator matrix of the filter.
Result<std::shared_ptr<void>> prepare_dct(const Graph& graph, const Node& node, ThreadPool* pool);
Result<std::shared_ptr<void>> prepare_idct(const Graph& graph, const Node& node, ThreadPool* pool);
Result<std::shared_ptr<void>> prepare_spectral_filter(const Graph& graph, const Node& node, ThreadPool* pool);

// Kernels. Without a prepared state (or one made for other shapes) they build a temporary
// one; views that are not contiguous f32 go to the reference kernel.
Status cpu_dct_f32_avx2(const KernelArgs& args);
Status cpu_dct_f32_avx512(const KernelArgs& args);
Status cpu_idct_f32_avx2(const KernelArgs& args);
Status cpu_idct_f32_avx512(const KernelArgs& args);
Status cpu_spectral_filter_f32_avx2(const KernelArgs& args);
Status cpu_spectral_filter_f32_avx512(const KernelArgs& args);

inline constexpr host::HostKernel cpu_dct_f32_avx2_with_prepare{cpu_dct_f32_avx2, prepare_dct};
inline constexpr host::HostKernel cpu_dct_f32_avx512_with_prepare{cpu_dct_f32_avx512, prepare_dct};
inline constexpr host::HostKernel cpu_idct_f32_avx2_with_prepare{cpu_idct_f32_avx2, prepare_idct};
inline constexpr host::HostKernel cpu_idct_f32_avx512_with_prepare{cpu_idct_f32_avx512, prepare_idct};
inline constexpr host::HostKernel cpu_spectral_filter_f32_avx2_with_prepare{cpu_spectral_filter_f32_avx2,
                                                                            prepare_spectral_filter};
inline constexpr host::HostKernel cpu_spectral_filter_f32_avx512_with_prepare{cpu_spectral_filter_f32_avx512,
                                                                              prepare_spectral_filter};

// Which route a filter state took (for tests and benchmarks): true = matrix product.
bool spectral_filter_uses_matrix(const void* prepared);

}  // namespace longrun::cpu
