// The int8 GEMM kernel layer (docs/cpu-kernels.md#int8-gemm): y = A · Wᵀ with W[N, K] (a
// linear layer's trans_b weight, row n = output channel n) quantized per output channel and
// A[M, K] quantized per row when the product runs; the products are summed exactly in int32,
// then dequantized in f32 and finished by the matmul epilogue (gemm.h, Epilogue).
//
// The numeric format, which the scalar reference below defines and the AVX2 kernel matches
// bit for bit:
//   scale[r] = max_k |x[r, k]| / 127 (one f32 division); q[r, k] = rhe(clamp(x[r, k] / scale[r],
//   -127, 127)) as s8, rhe = round half to even. A row whose scale is 0 (all zeros, or a maximum
//   so small that max / 127 underflows to 0) has q = 0. An activation row holding an infinity
//   or a NaN gets scale NaN and q = 0, so its output row is NaN; a weight holding one is an
//   error (quantize_weight).
//   acc[m, n] = Σ_k qa[m, k] · qw[n, k] in int32: exact while 127 · 127 · K < 2^31 (kMaxK).
//   y[m, n] = float(acc[m, n]) · (scale_a[m] · scale_w[n]) (the scale product rounded to f32
//   first, then one f32 multiply), then the epilogue y = act(alpha · y + bias[n] + beta · C).
//
// Results are bitwise independent of the thread count: each output element is one exact
// integer sum, converted and scaled by the same two multiplies whichever task computes it.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/gemm.h"
#include "longrun/status.h"
#include "longrun/thread_pool.h"

namespace longrun::cpu::s8 {

inline constexpr int kQMax = 127;
// The largest K whose int32 sums are exact: 127 · 127 · K < 2^31.
inline constexpr int64_t kMaxK = (int64_t(1) << 31) / (int64_t(kQMax) * kQMax);
static_assert(int64_t(kQMax) * kQMax * kMaxK < (int64_t(1) << 31) &&
              int64_t(kQMax) * kQMax * (kMaxK + 1) >= (int64_t(1) << 31));

// Round half to even of a float of magnitude at most 2^22, independent of the FPU's rounding
// mode.
float round_half_even(float x);

// The scalar definition of the row quantization: rows r < rows of `cols` floats (row r at
// src + r * ld) to q (row r at q + r * ldq) and scale[r].
void quantize_rows_reference(const float* src, int64_t rows, int64_t cols, int64_t ld, int8_t* q, int64_t ldq,
                             float* scale);

// A weight W[N, K] quantized per output channel (row n of W).
struct QuantizedWeight {
  int64_t n = 0, k = 0;
  std::vector<int8_t> q;     // [n, k] row-major
  std::vector<float> scale;  // [n]
};
// Quantizes W[n, k] (row-major, rows ld floats apart). Errors: a negative or too large
// dimension (k > kMaxK), a non-finite element (named by row and column), no memory.
Result<QuantizedWeight> quantize_weight(const float* w, int64_t n, int64_t k, int64_t ld);

// The scalar definition of the product, without the epilogue: y[m, n] (rows ldy apart) from
// quantized activations qa (row m at qa + m * ldqa) with scales sa and a quantized weight.
void gemm_s8_reference(const int8_t* qa, int64_t ldqa, const float* sa, int64_t m, const QuantizedWeight& w,
                       float* y, int64_t ldy);

// The AVX2 kernel's weight panels. Panel p holds output channels [16p, 16p + 16) for all of K
// (padded to even, k_pairs = ceil(K / 2)): pair t of panel p is 32 int16 at
// data[(p * k_pairs + t) * 32], in two halves of 8 channels; half h holds, for i < 8, channel
// c = 16p + 8h + i's (qw[c, 2t], qw[c, 2t + 1]) at 16h + 2i, sign-extended to int16; zero for
// c >= N or k >= K. One half is one ymm: vpmaddwd against a broadcast pair (qa[m, 2t],
// qa[m, 2t + 1]) gives the 8 channels' two-term sums in int32 lanes, exact (|q| <= 127, so
// no pair is -32768 · -32768, the one vpmaddwd input that saturates).
//
// A VNNI kernel (vpdpbusd, AVX-512 VNNI or AVX-VNNI) extends this to quads: s8
// (qw[c, 4t .. 4t + 3]) per channel lane, K padded to a multiple of 4, activations as
// u8 = qa + 128, and a per-channel term -128 · Σ_k qw[c, k] stored with the panel and added to
// the accumulators. vpdpbusd wraps modulo 2^32, so the result is the same int32 as here
// whenever the true sum fits (K <= kMaxK), although its intermediate u8 · s8 sums may not.
struct PackedWeightS8 {
  int64_t n = 0, k = 0, k_pairs = 0, panels = 0;
  std::vector<int16_t> data;  // panels * k_pairs * 32
  std::vector<float> scale;   // panels * 16, zero past n
};
inline constexpr int kPanelWidth = 16;
// Errors: buffers that do not match the shape, K > kMaxK, no memory.
Result<PackedWeightS8> pack_weight_s8x16(const QuantizedWeight& w);

// The AVX2 kernel (call only where the machine has AVX2): quantizes A[m, K] (rows lda floats
// apart) per row with AVX2, multiplies by the packed weight and writes y[m, N] (rows ldy
// apart), each finished 6 x 16 tile then going through `epilogue` (null: none) with the AVX2
// matmul epilogue. Its bias, when set, points at column 0; its c at element (0, 0). Threads
// over `pool` (null: the calling thread). Errors: shapes that do not match the weight, K >
// kMaxK, strides shorter than a row, no memory for the quantized A (allocated per call).
Status gemm_s8_avx2(const float* a, int64_t m, int64_t lda, const PackedWeightS8& w, float* y, int64_t ldy,
                    const gemm::Epilogue* epilogue, ThreadPool* pool);

// The AVX2 row quantization behind gemm_s8_avx2 (exposed for tests): like
// quantize_rows_reference, but q as int16 rows ldq >= round_up(cols, 8) apart, zero from
// cols to round_up(cols, 8).
void quantize_rows_avx2(const float* src, int64_t rows, int64_t cols, int64_t ld, int16_t* q, int64_t ldq,
                        float* scale);

// One block of gemm_s8_avx2 (gemm_s8_avx2.cpp): rows [0, m) x the packed weight's panels
// [panel0, panel0 + panels), output columns [16 panel0, min(N, 16 (panel0 + panels))).
struct BlockArgs {
  const int16_t* qa = nullptr;  // the block's first quantized row; rows lda int16 apart
  int64_t lda = 0;
  const float* sa = nullptr;  // the block's row scales
  int64_t m = 0;
  const PackedWeightS8* w = nullptr;
  int64_t panel0 = 0, panels = 0;
  float* y = nullptr;  // the block's element (0, 16 panel0); rows ldy apart
  int64_t ldy = 0;
  const gemm::Epilogue* epilogue = nullptr;  // at the block's (0, 16 panel0); null: none
};
void gemm_s8_block_avx2(const BlockArgs& args);
inline constexpr int kTileRows = 6;  // the AVX2 microkernel's rows

}  // namespace longrun::cpu::s8
