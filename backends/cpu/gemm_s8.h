// The int8 GEMM kernel layer (docs/cpu-kernels.md#int8-gemm): y = A · Wᵀ with W[N, K] (row n
// = output channel n; a linear layer's [K, N] weight is quantized per column into the same
// form) quantized per output channel and A[M, K] quantized per row when the product runs; the products are
// summed exactly in int32, then dequantized in f32 and finished by the matmul epilogue (gemm.h, Epilogue).
//
// The numeric format is defined in longrun/ops/reduced_precision.h (ops::s8); the AVX2
// kernel matches its scalar definition bit for bit.
//
// Results are bitwise independent of the thread count: each output element is one exact
// integer sum, converted and scaled by the same two multiplies whichever task computes it.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_blocks.h"
#include "longrun/dtype.h"
#include "longrun/ops/reduced_precision.h"
#include "longrun/status.h"
#include "longrun/thread_pool.h"

namespace longrun::cpu::s8 {

using ops::s8::gemm_s8_reference;
using ops::s8::kMaxK;
using ops::s8::kQMax;
using ops::s8::quantize_rows_reference;
using ops::s8::QuantizedWeight;
using ops::s8::round_half_even;

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

// A linear layer's weight quantized straight into the panels (call only where the machine
// has AVX2): the same bytes as pack_weight_s8x16(ops::s8::quantize_weight(w, dtype, layout,
// n, k)), made panel by panel over `pool` (null: the calling thread), each channel quantized
// by quantize_rows_avx2. Errors: quantize_weight's (a non-finite element is named by its
// index), no memory.
Result<PackedWeightS8> quantize_pack_weight_avx2(const void* w, DType dtype, ops::LinearWeight layout,
                                                 int64_t n, int64_t k, ThreadPool* pool);

// What quantize_pack_weight_avx2(w, dtype, layout, n, k, pool) holds besides its result while
// it runs: each of up to min(pool's threads, panels) threads its channels' f32 rows (unless
// the weight is f32 nk, read in place) and their quantized values; 0 for arguments it rejects.
// Errors: a size past int64.
Result<int64_t> quantize_pack_weight_transient_bytes(DType dtype, ops::LinearWeight layout, int64_t n,
                                                     int64_t k, ThreadPool* pool);

// The scratch gemm_s8_avx2 needs for A[m, K]: the quantized rows (int16, round_up(K, 8)
// apart) from offset 0, then the row scales (float) from the next multiple of 64 bytes.
// Errors: a negative or too large shape.
Result<int64_t> gemm_s8_scratch_bytes(int64_t m, int64_t k);

// The AVX2 kernel (call only where the machine has AVX2): quantizes A[m, K] (rows lda floats
// apart) per row with AVX2, multiplies by the packed weight and writes y[m, N] (rows ldy
// apart), each finished 6 x 16 tile then going through `epilogue` (null: none) with the AVX2
// matmul epilogue. Its bias, when set, points at column 0; its c at element (0, 0). Threads
// over `pool` (null: the calling thread). The quantized A goes into `scratch` (at least
// gemm_s8_scratch_bytes(m, K) bytes, 4-byte aligned; its contents are overwritten) when it
// is given and large enough, else into buffers allocated for the call. Errors: shapes that
// do not match the weight, K > kMaxK, strides shorter than a row, no memory for the
// quantized A (only without scratch).
Status gemm_s8_avx2(const float* a, int64_t m, int64_t lda, const PackedWeightS8& w, float* y, int64_t ldy,
                    const gemm::Epilogue* epilogue, ThreadPool* pool, void* scratch = nullptr,
                    int64_t scratch_bytes = 0);

// The AVX2 row quantization behind gemm_s8_avx2 (exposed for tests): like
// quantize_rows_reference, but q as int16 rows ldq >= round_up(cols, 8) apart, zero from
// cols to round_up(cols, 8).
void quantize_rows_avx2(const float* src, int64_t rows, int64_t cols, int64_t ld, int16_t* q, int64_t ldq,
                        float* scale);

// One block of gemm_s8_avx2 (gemm_s8_avx2.cpp): the block's m rows x the packed weight's
// panels [panel0, panel0 + panels), output columns [16 panel0, min(N, 16 (panel0 + panels)))
// (gemm::Block: y and the epilogue at the block's first element).
struct BlockArgs : gemm::Block {
  const int16_t* qa = nullptr;  // the block's first quantized row; rows lda int16 apart
  int64_t lda = 0;
  const float* sa = nullptr;  // the block's row scales
  const PackedWeightS8* w = nullptr;
};
void gemm_s8_block_avx2(const BlockArgs& args);

// One panel of quantize_pack_weight_avx2: channels i < count (<= kPanelWidth) from the f32
// rows rows[i] (K values each) into `panel` (k_pairs * 32 int16, zero past count) and
// scale[i], through q (kPanelWidth rows of ldq >= round_up(K, 8) int16). Returns false, with
// the panel unfinished, when a row holds an infinity or a NaN.
bool pack_panel_s8x16_avx2(const float* const* rows, int count, int64_t k, int16_t* q, int64_t ldq,
                           int16_t* panel, float* scale);
inline constexpr int kTileRows = 6;  // the AVX2 microkernel's rows

}  // namespace longrun::cpu::s8
