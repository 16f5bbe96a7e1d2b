// The cpu backend's matmul: a BLIS-style GEMM (pack A into MR-row panels and B into
// NR-column panels, cache-blocked over K, register-blocked microkernel) with the matmul
// epilogue (alpha, bias, beta*C, activation) applied to each finished output tile.
//
// Layering: gemm.cpp (no intrinsics) is the driver — argument checks, batch broadcasting,
// blocking, threading and the prepare step. The ISA files supply the inner pieces through
// GemmIsaKernels: gemm_pack_avx2.cpp (the panel packer, which the AVX-512 level reuses),
// gemm_avx2.cpp (6x16 microkernel), gemm_avx512.cpp (14x32 microkernel, and 6x64 for a
// product whose A and B are both read in place with N = 64: attention's P·V), epilogue_avx2.cpp
// and epilogue_avx512.cpp (the vectorised epilogue).
//
// Determinism: every output element is one FMA chain over k = 0..K-1 in order, started at
// 0 (a later K block resumes from the partial sum stored in Y), then the epilogue. Blocking
// and thread count only decide which task computes an element, never how, so results are
// bitwise identical across thread counts and cache-block sizes.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/host/host_executor.h"
#include "longrun/graph.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu {

// Matmul kernels (KernelFn) and their prepare steps (prepack a weight B, size the scratch).
Status cpu_matmul_f32_avx2(const KernelArgs& args);
Status cpu_matmul_f32_avx512(const KernelArgs& args);
Result<std::shared_ptr<void>> cpu_matmul_prepare_avx2(const Graph& graph, const Node& node, ThreadPool* pool);
Result<std::shared_ptr<void>> cpu_matmul_prepare_avx512(const Graph& graph, const Node& node,
                                                        ThreadPool* pool);

inline constexpr host::HostKernel cpu_matmul_f32_avx2_with_prepare{cpu_matmul_f32_avx2,
                                                                   cpu_matmul_prepare_avx2};
inline constexpr host::HostKernel cpu_matmul_f32_avx512_with_prepare{cpu_matmul_f32_avx512,
                                                                     cpu_matmul_prepare_avx512};

namespace gemm {

// The epilogue of a tile: y = act(alpha * y + bias[n] + beta * C[m, n]). Pointers are
// already offset to the tile's first row/column.
struct Epilogue {
  float alpha = 1.0f;
  float beta = 0.0f;
  const float* bias = nullptr;  // contiguous, at the tile's first column; null: none
  const float* c = nullptr;     // at the tile's (0, 0); rows ldc apart, columns contiguous
  int64_t ldc = 0;
  Activation act = Activation::none;
};

// One macro-kernel call: the (m x n) block of Y at `y` (rows ldy apart) for one K block.
struct MacroArgs {
  const float* a = nullptr;  // packed A: ceil(m / MR) panels of kc x MR, panel stride kc * MR
  // When set, A is read in place instead (element (i, k) at a_direct[i * lda + k]) and `a`
  // is unused.
  const float* a_direct = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;  // packed B: ceil(n / NR) panels, `b_panel_stride` apart, kc x NR each
  int64_t b_panel_stride = 0;
  // B's step per k: NR in a packed panel; B's row stride when B is read in place (row-major
  // f32 with whole NR-column panels, so every vector load stays inside its row).
  int64_t ldb = 0;
  int64_t m = 0, n = 0, kc = 0;
  float* y = nullptr;
  int64_t ldy = 0;
  bool accumulate = false;             // Y already holds the sum over the earlier K blocks
  const Epilogue* epilogue = nullptr;  // last K block only; null: store the raw sums
  // Whole vectors of Y written with non-temporal stores (gemm.cpp; cpu_isa.h, stream_min_bytes: Y too
  // large for the cache, one K block, no epilogue; y and ldy keep every vector aligned). The
  // macro kernel ends with an sfence.
  bool stream = false;
};

// The panel packer: dst[k * width + i] = src[i * s_w + k * s_k] for i < w (zero for
// w <= i < width), k < kc. `src` points at element (0, 0) in units of `dtype` (f32, f16 or
// bf16; 16-bit values are widened exactly). Used for A (width MR, s_w = stride along m) and
// B (width NR, s_w = stride along n).
using PackPanelFn = void (*)(const void* src, DType dtype, int64_t s_w, int64_t s_k, int64_t w, int64_t kc,
                             int width, float* dst);
using MacroKernelFn = void (*)(const MacroArgs& args);
// Applies `e` in place to the m x n tile at y (rows ldy apart).
using EpilogueFn = void (*)(float* y, int64_t ldy, int64_t m, int64_t n, const Epilogue& e);

struct GemmIsaKernels {
  int mr = 0, nr = 0;  // microkernel tile
  // Cache blocking: K block (the kc x NR B micro-panel is reused across an M block from L1/L2)
  // and M block rows (a multiple of mr), sized so the B micro-panel stays in L1 and the
  // packed A block in L2 of a core with a 32-48 KiB L1d and a 1-2 MiB L2.
  int64_t kc_max = 0, mc = 0;
  PackPanelFn pack_panel = nullptr;
  MacroKernelFn macro = nullptr;
  EpilogueFn epilogue = nullptr;
  // Optional: the macro kernel for A and B both read in place with nr < n <= wide_n (one
  // tile spans all of N; gemm_impl.h, macro_wide). Null: `macro` takes those too.
  MacroKernelFn macro_wide = nullptr;
  int64_t wide_n = 0;
  // The K block of a wide-tile product whose K fits one kc_max block (gemm.cpp,
  // wide_short_k): its kc x wide_n B block stays in L1 across the M block's tiles, where
  // kc_max's would be read from L2 by every tile (gemm_impl.h). 0: kc_max.
  int64_t wide_kc_max = 0;
};

// Defined in the ISA files.
void pack_panel_avx2(const void* src, DType dtype, int64_t s_w, int64_t s_k, int64_t w, int64_t kc, int width,
                     float* dst);
void gemm_macro_f32_avx2_6x16(const MacroArgs& args);
void gemm_macro_f32_avx512(const MacroArgs& args);
void gemm_macro_wide_f32_avx512(const MacroArgs& args);
void gemm_epilogue_f32_avx2(float* y, int64_t ldy, int64_t m, int64_t n, const Epilogue& e);
void gemm_epilogue_f32_avx512(float* y, int64_t ldy, int64_t m, int64_t n, const Epilogue& e);

const GemmIsaKernels& gemm_kernels_avx2();
const GemmIsaKernels& gemm_kernels_avx512();

// The driver behind both matmul kernels (gemm.cpp); `prepared` may be null (then any
// scratch is allocated for this call).
Status matmul_run(const GemmIsaKernels& isa, const KernelArgs& args);
Result<std::shared_ptr<void>> matmul_prepare(const GemmIsaKernels& isa, const Graph& graph, const Node& node,
                                             ThreadPool* pool);

// Called by a matmul prepare that has just made the packed copy of weight v (its B): when
// every node that reads v's bytes is a matmul taking them as B, runs read packed copies
// alone, so the original's file pages go (release_file_pages, longrun/file_pages.h; a no-op
// for memory that is not a registered file mapping). A weight another op also reads (a tied
// embedding table) stays mapped: its pages would only come back.
void release_packed_weight_pages(const Graph& graph, ValueId v);

}  // namespace gemm
}  // namespace longrun::cpu
