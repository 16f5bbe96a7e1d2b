// The bf16 GEMM kernel layer (docs/cpu-kernels.md#bf16-gemm): y = A · Wᵀ with W[N, K] (a
// linear layer's weight, row n = output channel n) rounded to bf16 once and packed at prepare,
// and A[M, K] rounded to bf16 while it is packed on every run. The AVX2 microkernel widens
// the bf16 panels to f32 (zero-extend and a 16-bit shift, exact) and sums the exact products with
// f32 FMA; the finished tiles go through the f32 matmul epilogue (gemm.h, Epilogue).
//
// The numeric format is defined in longrun/ops/reduced_precision.h (ops::bf16); the kernel
// agrees with its scalar definition within the f32 summation's rounding error.
//
// Results are bitwise independent of the thread count: each output element is one FMA chain
// over k = 0..K-1 in order, whichever task computes it.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_blocks.h"
#include "longrun/ops/reduced_precision.h"
#include "longrun/status.h"
#include "longrun/thread_pool.h"

namespace longrun::cpu::bf16 {

using ops::bf16::gemm_bf16_reference;
using ops::bf16::RoundedWeight;

// The weight panels: the f32 GEMM's packed B layout (gemm.h, a K x NR panel) in bf16, half
// its bytes. Panel p holds output channels [16p, 16p + 16) for all of K: row k of panel p is
// the 16 bf16 w[16p + i, k] (i < 16) at data[(p * K + k) * 16 + i], zero for channels >= N.
// The kernel widens a row's halves to two ymm of f32 with vpmovzxwd and a 16-bit shift.
struct PackedWeightBF16 {
  int64_t n = 0, k = 0, panels = 0;
  std::vector<uint16_t> data;  // panels * k * 16
};
inline constexpr int kPanelWidth = 16;
inline constexpr int kTileRows = 6;  // the AVX2 microkernel's rows
// Errors: a buffer that does not match the shape, no memory.
Result<PackedWeightBF16> pack_weight_bf16x16(const RoundedWeight& w);
// The packed bytes of an [n, k] weight (for the weight-copy reservation).
int64_t packed_weight_bytes(int64_t n, int64_t k);

// The AVX2 kernel (call only where the machine has AVX2): rounds A[m, K] (rows lda floats
// apart) to bf16 into a row-major scratch, multiplies by the packed weight and writes y[m, N]
// (rows ldy apart), each finished 6 x 16 tile then going through `epilogue` (null: none) with
// the AVX2 matmul epilogue. Its bias, when set, points at column 0; its c at element (0, 0).
// Threads over `pool` (null: the calling thread). Errors: a packed weight whose buffer does
// not match its shape, strides shorter than a row, no memory for the rounded A (allocated
// per call).
Status gemm_bf16_avx2(const float* a, int64_t m, int64_t lda, const PackedWeightBF16& w, float* y,
                      int64_t ldy, const gemm::Epilogue* epilogue, ThreadPool* pool);

// The AVX2 activation rounding behind gemm_bf16_avx2 (exposed for tests): dst[r * ldd + k] =
// ops::bf16::round(src[r * ld + k]) bit for bit for k < cols, zero from cols to
// round_up(cols, 8) <= ldd.
void round_rows_avx2(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst, int64_t ldd);

// One block of gemm_bf16_avx2 (gemm_bf16_avx2.cpp): the block's m rows x the packed weight's
// panels [panel0, panel0 + panels) (gemm::Block: y and the epilogue at the block's first
// element).
struct BlockArgs : gemm::Block {
  const float* a = nullptr;  // the block's first rounded row; rows lda floats apart
  int64_t lda = 0;
  const PackedWeightBF16* w = nullptr;
};
void gemm_bf16_block_avx2(const BlockArgs& args);

}  // namespace longrun::cpu::bf16
