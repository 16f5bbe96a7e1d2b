// The task schedule of the cpu GEMM drivers (gemm.cpp, gemm_s8.cpp, gemm_bf16.cpp): how many
// blocks the output is cut into for a pool, and, for the int8 and bf16 GEMMs, the blocks of
// whole row tiles x whole weight panels run over the pool. Which task computes an element
// never changes how it is computed, so results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "backends/cpu/gemm.h"
#include "longrun/thread_pool.h"

namespace longrun::cpu::gemm {

// Splits blocks of mc x nc units (of m_units x n_units, `batch` times over) until there are
// 4 tasks a thread, enough to balance the pool's chunks: N first, down to 4 units, then M,
// down to min_mc units. One thread keeps the blocks as they are.
inline void split_for_threads(int64_t m_units, int64_t n_units, int64_t batch, int threads, int64_t min_mc,
                              int64_t& mc, int64_t& nc) {
  auto div_up = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t want = threads > 1 ? 4 * int64_t(threads) : 1;
  auto count = [&] { return batch * div_up(m_units, mc) * div_up(n_units, nc); };
  while (count() < want && nc > 4) nc = div_up(nc, 2);
  while (count() < want && mc > min_mc) mc = div_up(mc, 2);
}

// One task of a tiled GEMM: output rows [m0, m0 + m) by weight panels [panel0, panel0 + panels).
// The int8 and bf16 kernels' block arguments extend it with their operands.
struct Block {
  int64_t m0 = 0, m = 0;
  int64_t panel0 = 0, panels = 0;
  float* y = nullptr;  // the block's first output element; rows ldy apart
  int64_t ldy = 0;
  const Epilogue* epilogue = nullptr;  // the caller's, offset to the block's first element; null: none
};

// Runs block(const Block&) once for every block of y (m rows, ldy apart) covering m rows in
// tiles of tile_rows by `panels` panels of panel_width columns, over `pool` (null: the calling
// thread). Blocks start at 8 tiles x 128 panels, so that an M block's prepared rows (8 tiles x
// K) stay in L2 while each panel streams through L1, and are split by split_for_threads down
// to one tile.
template <class Fn>
void for_each_block(int64_t m, int64_t tile_rows, int64_t panels, int64_t panel_width, float* y, int64_t ldy,
                    const Epilogue* epilogue, ThreadPool* pool, Fn&& block) {
  auto div_up = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  const int64_t m_tiles = div_up(m, tile_rows);
  int64_t mc_tiles = std::min<int64_t>(m_tiles, 8), nc_panels = std::min<int64_t>(panels, 128);
  split_for_threads(m_tiles, panels, 1, threads, 1, mc_tiles, nc_panels);
  const int64_t n_blocks = div_up(panels, nc_panels), tasks = div_up(m_tiles, mc_tiles) * n_blocks;
  auto job = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      Block b;
      b.m0 = (t / n_blocks) * mc_tiles * tile_rows;
      b.m = std::min(m, b.m0 + mc_tiles * tile_rows) - b.m0;
      b.panel0 = (t % n_blocks) * nc_panels;
      b.panels = std::min(panels, b.panel0 + nc_panels) - b.panel0;
      b.y = y + b.m0 * ldy + b.panel0 * panel_width;
      b.ldy = ldy;
      Epilogue e;
      if (epilogue != nullptr) {
        e = *epilogue;
        if (e.bias != nullptr) e.bias += b.panel0 * panel_width;
        if (e.c != nullptr) e.c += b.m0 * e.ldc + b.panel0 * panel_width;
        b.epilogue = &e;
      }
      block(static_cast<const Block&>(b));
    }
  };
  if (pool != nullptr && threads > 1 && tasks > 1)
    pool->parallel_for(tasks, 1, std::ref(job));  // std::ref: no std::function allocation
  else
    job(0, tasks);
}

// Runs rows(begin, end) over rows [0, m) of k elements: on the pool (null: the calling
// thread) in chunks of about 16K elements.
template <class Fn>
void for_each_row_range(int64_t m, int64_t k, ThreadPool* pool, Fn&& rows) {
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, k));
  if (pool != nullptr && pool->num_threads() > 1)
    pool->parallel_for(m, grain, std::ref(rows));
  else
    rows(0, m);
}

}  // namespace longrun::cpu::gemm
