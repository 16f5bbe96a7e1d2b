// The bf16 GEMM (gemm_bf16.h): the weight panel packing and the driver of the AVX2 kernel
// (argument checks, activation rounding over the pool, blocking, threading). No intrinsics here.
#include "cpu/gemm_bf16.h"

#include <algorithm>
#include <new>
#include <string>

namespace longrun::cpu::bf16 {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t packed_weight_bytes(int64_t n, int64_t k) {
  return ceil_div(n, kPanelWidth) * k * kPanelWidth * int64_t(sizeof(uint16_t));
}

Result<PackedWeightBF16> pack_weight_bf16x16(const RoundedWeight& w) {
  if (w.n < 0 || w.k < 0 || int64_t(w.w.size()) != w.n * w.k)
    return invalid_argument("bf16 weight: buffer does not match the shape [" + std::to_string(w.n) + ", " +
                            std::to_string(w.k) + "]");
  PackedWeightBF16 p;
  p.n = w.n;
  p.k = w.k;
  p.panels = ceil_div(w.n, kPanelWidth);
  try {
    p.data.assign(size_t(p.panels * p.k * kPanelWidth), 0);
  } catch (const std::bad_alloc&) {
    return out_of_memory("bf16 weight: cannot allocate the packed panels of [" + std::to_string(w.n) + ", " +
                         std::to_string(w.k) + "]");
  }
  for (int64_t c = 0; c < w.n; ++c) {
    uint16_t* dst = p.data.data() + (c / kPanelWidth) * p.k * kPanelWidth + c % kPanelWidth;
    for (int64_t k = 0; k < w.k; ++k) dst[k * kPanelWidth] = w.w[size_t(c * w.k + k)];
  }
  return p;
}

Status gemm_bf16_avx2(const float* a, int64_t m, int64_t lda, const PackedWeightBF16& w, float* y,
                      int64_t ldy, const gemm::Epilogue* epilogue, ThreadPool* pool) {
  const int64_t K = w.k, N = w.n;
  if (m < 0 || K < 0 || N < 0) return invalid_argument("bf16 gemm: negative dimension");
  if (w.panels != ceil_div(N, kPanelWidth) || int64_t(w.data.size()) != w.panels * K * kPanelWidth)
    return invalid_argument("bf16 gemm: the packed weight's buffer does not match its shape [" +
                            std::to_string(N) + ", " + std::to_string(K) + "]");
  if (m > 0 && (lda < K || ldy < N))
    return invalid_argument("bf16 gemm: row strides (A " + std::to_string(lda) + ", Y " +
                            std::to_string(ldy) + ") shorter than the rows (K " + std::to_string(K) + ", N " +
                            std::to_string(N) + ")");
  if (m == 0 || N == 0) return {};
  if (epilogue != nullptr && epilogue->c != nullptr && epilogue->ldc < N)
    return invalid_argument("bf16 gemm: C's row stride " + std::to_string(epilogue->ldc) +
                            " is shorter than N " + std::to_string(N));

  // Rounded A: rows of round_up(K, 8) floats (round_rows_avx2 writes whole vectors).
  const int64_t lda_r = std::max<int64_t>(8, ceil_div(K, 8) * 8);
  int64_t ar_elems = 0;
  if (__builtin_mul_overflow(m, lda_r, &ar_elems) || ar_elems > (int64_t(1) << 40))
    return invalid_argument("bf16 gemm: A [" + std::to_string(m) + ", " + std::to_string(K) +
                            "] is too large");
  std::vector<float> ar;
  try {
    ar.resize(static_cast<size_t>(ar_elems));
  } catch (const std::bad_alloc&) {
    return out_of_memory("bf16 gemm: cannot allocate the rounded A [" + std::to_string(m) + ", " +
                         std::to_string(lda_r) + "] f32");
  }
  gemm::for_each_row_range(m, K, pool, [&](int64_t begin, int64_t end) {
    round_rows_avx2(a + begin * lda, end - begin, K, lda, ar.data() + begin * lda_r, lda_r);
  });
  // Blocks of whole tiles x whole panels (gemm_blocks.h): an M block's rounded rows (48 x K
  // f32) stay in L2 while each panel's K x 16 bf16 streams through L1.
  auto run_block = [&](const gemm::Block& b) {
    BlockArgs g;
    static_cast<gemm::Block&>(g) = b;
    g.a = ar.data() + b.m0 * lda_r;
    g.lda = lda_r;
    g.w = &w;
    gemm_bf16_block_avx2(g);
  };
  gemm::for_each_block(m, kTileRows, w.panels, kPanelWidth, y, ldy, epilogue, pool, run_block);
  return {};
}

}  // namespace longrun::cpu::bf16
