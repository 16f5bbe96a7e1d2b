// The GEMM microkernel and its macro-kernel loop (gemm.h), written once against a vector
// struct V (vec_avx2.h / vec_avx512.h) and a tile shape Cfg. Included only by gemm_avx2.cpp
// / gemm_avx512.cpp, which instantiate GemmKernels<Vec, Cfg>.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "cpu/gemm.h"

namespace longrun::cpu::gemm {
namespace {  // internal linkage: each ISA file owns its instantiations

// Cfg: kMr x kNr tiles (kNr = 2 vectors); kSplitNarrow: a panel of at most one vector of
// valid columns runs a one-vector kernel (half the FMAs); kUnrollK: unroll of the K loop
// (GCC 12 takes no template-dependent `#pragma GCC unroll`, hence the two spelled-out
// loops); kMcTiles: M block rows in tiles; kShortKLoop: Q·Kᵀ tiles through short_k_tiles;
// kShortKFetchAndStreamY: short_k_tiles fetches Y's lines ahead and streams Y where the GEMM
// streams it, as the per-tile path does (else neither: plain stores, no fetch);
// kFetchBOnce: only the first tile of each B panel in an M block prefetches B (macro);
// kMacro / kEpilogue: the ISA's exported macro kernel (a call of `macro`) and epilogue.
template <class V, class Cfg>
struct GemmKernels {
  using T = typename V::T;
  using M = typename V::M;
  static constexpr int L = V::L;
  static constexpr int kMr = Cfg::kMr, kNr = 2 * L;

  // One tile of kRows (<= MR) rows x kNv vectors of columns. Columns past n are computed on
  // the zero padding of the packed B panel and never loaded or stored. A partial last panel
  // runs the kernel with its exact row count, so no FMA is spent on missing rows. kDirect:
  // A is read in place (row r at a + r * lda, contiguous along k), addressed from one base
  // per 3 rows (base + {0, 1, 2} * lda fits x86 scaled-index addressing, so no row pointer
  // spills); otherwise from a packed kc x MR panel. kNoYFetch (short_k_tiles): never fetch Y's
  // lines ahead. fetch_b: prefetch B ahead (below).
  template <bool kDirect, int kRows, int kNv, bool kNoYFetch = false>
  static void micro(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t kc, float* y,
                    int64_t ldy, int64_t n, bool accumulate, bool stream, bool fetch_b = true) {
    M mask[kNv];
#pragma GCC unroll 8
    for (int j = 0; j < kNv; ++j) mask[j] = V::first_n_any(n - L * j);
    // Fetch the Y tile's lines for the coming stores while the K loop runs: with short K
    // (attention, K = 64) the stores otherwise stall on read-for-ownership misses. One row's
    // lines per two K steps (when kc >= 2 kRows), not all at the start: a burst of 28-42
    // prefetches overflows the L1 miss buffers and stalls the loop. Streamed stores need no
    // lines fetched. The K loop stays rolled (kUnrollK): a fully unrolled K = 64 kernel is
    // too large for the micro-op cache.
    const bool fetch = !kNoYFetch && !accumulate && !stream, spread = fetch && kc >= 2 * kRows;
    const int64_t last = std::min<int64_t>(n, L * kNv) - 1;
    auto fetch_row = [&](int r) __attribute__((always_inline)) {
      constexpr int kLines = std::max(1, std::min(L * kNv, 64) / 16);  // line starts: 0, 16, 32, 48
      for (int e = 0; e < kLines; ++e) V::prefetch_for_write(y + r * ldy + std::min<int64_t>(16 * e, last));
      V::prefetch_for_write(y + r * ldy + last);
    };
    if (fetch && !spread)
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) fetch_row(r);
    const bool full_n = n == L * kNv, streamed = stream && full_n;
    T acc[kRows][kNv];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
      for (int j = 0; j < kNv; ++j)
        acc[r][j] = accumulate ? V::load_part(y + r * ldy + L * j, mask[j], full_n) : V::zero();
    constexpr int kBases = (kRows + 2) / 3;
    const float* base[kBases];
#pragma GCC unroll 8
    for (int i = 0; i < kBases; ++i) base[i] = a + (kDirect ? 3 * i * lda : 0);
    auto step = [&](int64_t k) __attribute__((always_inline)) {
      T bv[kNv];
#pragma GCC unroll 8
      for (int j = 0; j < kNv; ++j) bv[j] = V::load(b + L * j);
      // B 32 K steps ahead into L2 (4 KB in a packed panel): a prepacked weight streams from
      // DRAM in a model (every layer's weights pass through once per run), and the first tile
      // of a panel otherwise waits on each of its lines, which matters most for GEMMs with few
      // rows that reuse each panel only a few times. With an AVX2 packed panel (one line per
      // K step) one prefetch per two steps covers every line. The panel's later tiles in an M
      // block find it in L1 / L2, so with Cfg::kFetchBOnce only the first one prefetches.
      constexpr int kBLines = std::max(2, L * kNv / 16);
      for (int e = 0; e < kBLines && fetch_b; ++e)
        _mm_prefetch(reinterpret_cast<const char*>(b + ldb * 32 + 16 * e), _MM_HINT_T1);
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        const T av = V::set1(kDirect ? base[r / 3][(r % 3) * lda + k] : a[r]);
#pragma GCC unroll 8
        for (int j = 0; j < kNv; ++j) acc[r][j] = V::fmadd(av, bv[j], acc[r][j]);
      }
      if (!kDirect) a += kMr;
      b += ldb;
    };
    int64_t k0 = 0;
    if (spread) {
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        fetch_row(r);
        step(2 * r);
        step(2 * r + 1);
      }
      k0 = 2 * kRows;
    }
    if constexpr (Cfg::kUnrollK == 4) {
#pragma GCC unroll 4
      for (int64_t k = k0; k < kc; ++k) step(k);
    } else {
      static_assert(Cfg::kUnrollK == 2);
#pragma GCC unroll 2
      for (int64_t k = k0; k < kc; ++k) step(k);
    }
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 8
      for (int j = 0; j < kNv; ++j) {
        if (streamed)
          V::stream(y + r * ldy + L * j, acc[r][j]);
        else
          V::store_part(y + r * ldy + L * j, mask[j], acc[r][j], full_n);
      }
  }

  using MicroFn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t, int64_t,
                           bool, bool, bool);
  using MicroRow = std::array<MicroFn, kMr>;
  static constexpr int kNarrowNv = Cfg::kSplitNarrow ? 1 : 2;

  // kMicro[direct][wide][rows - 1]; `wide`: more than one vector of valid columns.
  template <size_t... R>
  static constexpr std::array<std::array<MicroRow, 2>, 2> micro_table(std::index_sequence<R...>) {
    return {{{{{&micro<false, int(R) + 1, kNarrowNv>...}, {&micro<false, int(R) + 1, 2>...}}},
             {{{&micro<true, int(R) + 1, kNarrowNv>...}, {&micro<true, int(R) + 1, 2>...}}}}};
  }
  static constexpr auto kMicro = micro_table(std::make_index_sequence<kMr>());

  // The epilogue's C tile at (i, j), mm x nn (a residual, usually far out of cache): fetched
  // while the microkernel runs, not row by row after it.
  static void fetch_c(const MacroArgs& g, int64_t i, int64_t j, int64_t mm, int64_t nn) {
    if (g.epilogue != nullptr && g.epilogue->c != nullptr)
      for (int64_t r = 0; r < mm; ++r)
        for (int64_t e = 0; e < nn; e += 16)
          __builtin_prefetch(g.epilogue->c + (i + r) * g.epilogue->ldc + j + e);
  }
  // The epilogue of the finished tile at (i, j), when this is the last K block.
  static void finish(const MacroArgs& g, float* yt, int64_t i, int64_t j, int64_t mm, int64_t nn) {
    if (g.epilogue == nullptr) return;
    Epilogue e = *g.epilogue;
    if (e.bias != nullptr) e.bias += j;
    if (e.c != nullptr) e.c += i * e.ldc + j;
    Cfg::kEpilogue(yt, g.ldy, mm, nn, e);
  }

  // A read in place with one short K block (attention's Q·Kᵀ, K = head size): each tile's
  // FMAs are few for its Y stores, and when Y's row stride is a multiple of 2 KiB its rows'
  // lines crowd a few L1 sets. Tiles of Cfg::kShortKRows rows there (AVX-512: 7 instead of
  // 14) keep the tile's Y rows within the L1's associativity.
  static constexpr int64_t kShortK = 64;
  static_assert(Cfg::kShortKRows >= 1 && Cfg::kShortKRows <= Cfg::kMr &&
                (Cfg::kMcTiles * Cfg::kMr) % Cfg::kShortKRows == 0);

  // The whole kShortKRows-row tiles [0, m_end) of the full panel at column j, for A read in
  // place with one short K block and nothing to accumulate (Q·Kᵀ): one loop with the tile
  // kernel inlined and without the B prefetch (the kc x NR panel, 4 KiB at K = 64, stays in
  // L1 across the M block). How it writes Y depends on the ISA (Cfg::kShortKFetchAndStreamY):
  // - AVX2: no fetch of Y's lines, and plain stores even where Y could stream (gemm.cpp,
  //   streams_output): a 16-column tile row is one line, so this loop writes one line in
  //   each of a block's rows per B panel and every write-combining flush would go to a
  //   different row of Y; plain stores let the cache merge them.
  // - AVX-512: Y's lines fetched ahead and Y streamed, as in the per-tile path.
  __attribute__((flatten)) static void short_k_tiles(const MacroArgs& g, const float* bp, int64_t j,
                                                     int64_t m_end) {
    constexpr int kRows = Cfg::kShortKRows;
    constexpr bool kY = Cfg::kShortKFetchAndStreamY;
    for (int64_t i = 0; i < m_end; i += kRows) {
      float* yt = g.y + i * g.ldy + j;
      fetch_c(g, i, j, kRows, kNr);
      micro<true, kRows, 2, !kY>(g.a_direct + i * g.lda, g.lda, bp, g.ldb, g.kc, yt, g.ldy, kNr, false,
                                 kY && g.stream, false);
      finish(g, yt, i, j, kRows, kNr);
    }
  }

  static void macro(const MacroArgs& g) {
    const bool direct = g.a_direct != nullptr;
    const bool short_k = direct && g.kc <= kShortK;
    const int64_t mr = short_k ? Cfg::kShortKRows : kMr;
    const bool lean = Cfg::kShortKLoop && short_k && !g.accumulate;
    for (int64_t j = 0; j < g.n; j += kNr) {
      const float* bp = g.b + (j / kNr) * g.b_panel_stride;
      const int64_t nn = std::min<int64_t>(kNr, g.n - j);
      int64_t i0 = 0;
      if (lean && nn == kNr) {
        i0 = g.m / mr * mr;
        short_k_tiles(g, bp, j, i0);
      }
      for (int64_t i = i0; i < g.m; i += mr) {
        const int64_t mm = std::min<int64_t>(mr, g.m - i);
        float* yt = g.y + i * g.ldy + j;
        const float* a = direct ? g.a_direct + i * g.lda : g.a + (i / kMr) * g.kc * kMr;
        fetch_c(g, i, j, mm, nn);
        kMicro[direct][nn > L][size_t(mm - 1)](a, g.lda, bp, g.ldb, g.kc, yt, g.ldy, nn, g.accumulate,
                                               g.stream, !Cfg::kFetchBOnce || i == i0);
        finish(g, yt, i, j, mm, nn);
      }
    }
    if (g.stream) _mm_sfence();
  }

  // The wide tile (Cfg::kWideRows x kWideNv vectors), for a product whose A and B are both
  // read in place and whose N is one such tile: attention's P·V with head size 64 on AVX-512
  // (6 x 64: every row of P is read once per K block instead of once per 32-column panel, and
  // a tile's 6 rows of P, 4 KiB apart when N = 1024, fit one 8-way L1 set where 14 do not).
  static constexpr int kWideNv = Cfg::kWideNv;
  template <size_t... R>
  static constexpr std::array<MicroFn, sizeof...(R)> wide_table(std::index_sequence<R...>) {
    return {&micro<true, int(R) + 1, kWideNv>...};
  }
  static void macro_wide(const MacroArgs& g) {
    if constexpr (kWideNv > 0) {
      static constexpr auto kWide = wide_table(std::make_index_sequence<Cfg::kWideRows>());
      for (int64_t i = 0; i < g.m; i += Cfg::kWideRows) {
        const int64_t mm = std::min<int64_t>(Cfg::kWideRows, g.m - i);
        float* yt = g.y + i * g.ldy;
        fetch_c(g, i, 0, mm, g.n);
        kWide[size_t(mm - 1)](g.a_direct + i * g.lda, g.lda, g.b, g.ldb, g.kc, yt, g.ldy, g.n, g.accumulate,
                              g.stream, true);
        finish(g, yt, i, 0, mm, g.n);
      }
      if (g.stream) _mm_sfence();
    }
  }

  // K blocks of 512 (the kc x NR B micro-panel is reused across an M block from L1/L2);
  // packing is the AVX2 packer on every level (it is memory-bound).
  static const GemmIsaKernels& isa_kernels() {
    static const GemmIsaKernels k{kMr,
                                  kNr,
                                  512,
                                  Cfg::kMcTiles * kMr,
                                  pack_panel_avx2,
                                  Cfg::kMacro,
                                  Cfg::kEpilogue,
                                  Cfg::kMacroWide,
                                  kWideNv * L,
                                  Cfg::kWideKc};
    return k;
  }
};

}  // namespace
}  // namespace longrun::cpu::gemm
