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
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  auto round = [&](int64_t begin, int64_t end) {
    round_rows_avx2(a + begin * lda, end - begin, K, lda, ar.data() + begin * lda_r, lda_r);
  };
  const int64_t r_grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, K));
  if (pool != nullptr && threads > 1)
    pool->parallel_for(m, r_grain, round);
  else
    round(0, m);

  // Tasks: M blocks of whole tiles x N blocks of whole panels, as in the int8 GEMM
  // (gemm_s8.cpp): an M block of 8 tiles keeps its rounded rows (48 x K f32) in L2 while each
  // panel's K x 16 bf16 streams through L1; blocks are split until the pool has 4 tasks a thread.
  const int64_t m_tiles = ceil_div(m, kTileRows);
  int64_t mc_tiles = std::min<int64_t>(m_tiles, 8), nc_panels = std::min<int64_t>(w.panels, 128);
  const int64_t want = threads > 1 ? 4 * int64_t(threads) : 1;
  auto count = [&] { return ceil_div(m_tiles, mc_tiles) * ceil_div(w.panels, nc_panels); };
  while (count() < want && nc_panels > 4) nc_panels = ceil_div(nc_panels, 2);
  while (count() < want && mc_tiles > 1) mc_tiles = ceil_div(mc_tiles, 2);
  const int64_t n_blocks = ceil_div(w.panels, nc_panels), tasks = ceil_div(m_tiles, mc_tiles) * n_blocks;
  auto job = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t m0 = (t / n_blocks) * mc_tiles * kTileRows, p0 = (t % n_blocks) * nc_panels;
      BlockArgs g;
      g.a = ar.data() + m0 * lda_r;
      g.lda = lda_r;
      g.m = std::min(m, m0 + mc_tiles * kTileRows) - m0;
      g.w = &w;
      g.panel0 = p0;
      g.panels = std::min(w.panels, p0 + nc_panels) - p0;
      g.y = y + m0 * ldy + p0 * kPanelWidth;
      g.ldy = ldy;
      gemm::Epilogue e;
      if (epilogue != nullptr) {
        e = *epilogue;
        if (e.bias != nullptr) e.bias += p0 * kPanelWidth;
        if (e.c != nullptr) e.c += m0 * e.ldc + p0 * kPanelWidth;
        g.epilogue = &e;
      }
      gemm_bf16_block_avx2(g);
    }
  };
  if (pool != nullptr && threads > 1 && tasks > 1)
    pool->parallel_for(tasks, 1, job);
  else
    job(0, tasks);
  return {};
}

}  // namespace longrun::cpu::bf16
