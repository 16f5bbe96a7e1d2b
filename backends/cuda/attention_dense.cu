// CUDA kernels of attention (dense, fused): y = softmax(scale q k^T) v per (b, h) with the
// causal and key-padding masks and the optional log-sum-exp output. Semantics: attrs.h; oracle:
// ops/reference/attention.cpp. Two kernels, both an online softmax per query (running max m,
// sum l, accumulator O in f32, y = O / l at the end) in f32 FFMA on the CUDA cores (no TF32 or
// tensor cores: their rounding would not meet the f32 tolerance):
//  - tiled (the default where head and value dims are <= 128): FlashAttention-2 style. A block
//    of 256 threads owns 64 queries of one (b, h); K and V stream through shared memory in
//    tiles of 64 keys, double-buffered with cp.async (tile t + 1 loads while tile t is used).
//    Thread (tq, tk) = (tid / 16, tid % 16) owns query rows 4 tq + r (r < 4): it computes the
//    logits of those rows against keys tk + 16 c (c < 4) (a 4x4 register tile of S = Q K^T),
//    and the output O of those rows at value dims 64 j + 4 tk + e (e < 4). The 16 threads of
//    a row (a half warp) fold the row max by a fixed xor-shuffle tree; each keeps its own part
//    of l (summed by the same tree at the end); P goes through shared memory for P V.
//  - warp (the fallback for dims in (128, 256]; LONGRUN_CUDA_ATTENTION=warp forces it, read
//    once, to test or time it): a block of 8 warps per (b, h, 32 queries), 4 query rows per
//    warp, keys streamed 32 at a time; lane j computes key j's logit, then the lanes split the
//    value dims (attention.h: fold_chunk, add_values).
// Both compute a logit as scale * (a sequential f32 fma chain over the head dim), in the same
// order, and every reduction has a fixed order: the same bits run to run.
//
// Masks, as in the oracle: a masked key (padding, causal, beyond Nk) never contributes. The
// tiled kernel gives it weight p = 0 exactly and, since 0 * NaN is NaN, zero-fills the shared
// V rows of padded keys and of the keys past the last one loaded (Nk, or the causal limit of the
// block's last query), and skips (not multiplies by 0) the causally hidden keys of the tiles
// that hold some (their values are real keys of later rows and may be NaN).
// A NaN logit of a visible key makes its row NaN; a row with no visible key gets zeros and
// log-sum-exp -inf.
#include <cuda_pipeline.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/attention.h"
#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {
namespace {

using namespace attention_detail;  // NOLINT: the shared helpers of the attention kernels

// ---- tiled kernel ----

constexpr int kTileQ = 64;  // queries per block
constexpr int kTileK = 64;  // keys per K / V tile
constexpr int kTiledThreads = 256;
constexpr int kRowThreads = 16;   // threads per query row (tk); 16 row groups (tq)
constexpr int kThreadRows = 4;    // query rows per thread: 4 tq + r
constexpr int kThreadKeys = 4;    // keys per thread and tile: tk + 16 c
constexpr int kLdp = kTileK + 4;  // P row stride: the two rows a warp writes fall 16 banks apart
constexpr int kMaxTiledDim = 128;
static_assert(kRowThreads * kRowThreads == kTiledThreads && kRowThreads * kThreadRows == kTileQ &&
              kRowThreads * kThreadKeys == kTileK);
static_assert(kTileQ == kTileK, "load_tile_async loads the Q tile too");

// The operands and attributes of one attention node, as both kernels see them.
struct DenseArgs {
  const float* q;
  const float* k;
  const float* v;
  const uint8_t* mask;  // [B, Nk] or null
  float* out;
  float* lse;  // [B, H, Nq] or null
  int64_t BH, H, Nq, Nk;
  int hd, hv;
  float scale;
  bool causal;
};

struct TiledGeom : DenseArgs {
  int64_t q_tiles;
  bool q_vec, k_vec, v_vec;  // rows copied as 16-byte vectors (dim % 4 == 0, 16-byte aligned data)
};

// Shared memory of a tiled block, in floats: the Q tile, two K and two V tiles, the P tile and
// two tiles' key flags. D / DV: head / value dim rounded up to 64 or 128 (zero-padded). Q and K
// rows are padded by 4 floats so that the 16 K rows a warp reads at once hit distinct banks.
template <int D, int DV>
struct TiledLayout {
  static constexpr int ldq = D + 4, ldk = D + 4;
  static constexpr int q_off = 0;
  static constexpr int k_off = q_off + kTileQ * ldq;
  static constexpr int v_off = k_off + 2 * kTileK * ldk;
  static constexpr int p_off = v_off + 2 * kTileK * DV;
  static constexpr int ok_off = p_off + kTileQ * kLdp;
  static constexpr int bytes = (ok_off + 2 * kTileK) * 4;
  static constexpr int min_blocks = bytes <= 110 * 1024 ? 2 : 1;  // two fit an SM's 228 KiB
};

// The tile's rows [0, rows) x columns [0, width) of a row-major source with row length width
// into dst (row stride ld, W columns): cp.async where the element is there and keep(row), zeros
// in every other element of the kTileK x W tile (padded columns and rows, dropped rows). All
// threads; complete after __pipeline_wait_prior and a barrier.
template <int W, typename Keep>
__device__ __forceinline__ void load_tile_async(float* dst, int ld, const float* src, int rows, int width,
                                                bool vec, Keep keep) {
  if (vec) {  // width % 4 == 0: a vector is wholly inside or wholly outside the row
    constexpr int C4 = W / 4;
    static_assert(kTileK * C4 % kTiledThreads == 0);
#pragma unroll
    for (int it = 0; it < kTileK * C4 / kTiledThreads; ++it) {
      const int e = it * kTiledThreads + int(threadIdx.x), r = e / C4, c = e % C4 * 4;
      float* d = dst + r * ld + c;
      if (r < rows && c < width && keep(r))
        __pipeline_memcpy_async(d, src + int64_t(r) * width + c, 16);
      else
        *reinterpret_cast<float4*>(d) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  } else {
    static_assert(kTileK * W % kTiledThreads == 0);
#pragma unroll 4
    for (int it = 0; it < kTileK * W / kTiledThreads; ++it) {
      const int e = it * kTiledThreads + int(threadIdx.x), r = e / W, c = e % W;
      if (r < rows && c < width && keep(r))
        __pipeline_memcpy_async(dst + r * ld + c, src + int64_t(r) * width + c, 4);
      else
        dst[r * ld + c] = 0.0f;
    }
  }
}

// Starts loading the K and V tile of keys [k0, k0 + kTileK) of (b, h) into buffer buf and
// writes its key flags (1: a key to attend, before the causal rule; 0: padding or past k_end).
template <int D, int DV>
__device__ __forceinline__ void load_kv_async(const TiledGeom& g, float* smem, int buf, int64_t bh, int64_t b,
                                              int64_t k0, int64_t k_end) {
  using L = TiledLayout<D, DV>;
  const int rows = int(k_end - k0 < kTileK ? k_end - k0 : kTileK);
  const uint8_t* mask = g.mask != nullptr ? g.mask + b * g.Nk + k0 : nullptr;
  auto attend = [&](int r) { return mask == nullptr || mask[r] != 0; };
  load_tile_async<D>(smem + L::k_off + buf * kTileK * L::ldk, L::ldk, g.k + (bh * g.Nk + k0) * g.hd, rows,
                     g.hd, g.k_vec, [](int) { return true; });
  // Padded keys' V rows are zeros: weight 0 times a NaN there would be NaN.
  load_tile_async<DV>(smem + L::v_off + buf * kTileK * DV, DV, g.v + (bh * g.Nk + k0) * g.hv, rows, g.hv,
                      g.v_vec, attend);
  if (threadIdx.x < kTileK) {
    const int r = int(threadIdx.x);
    reinterpret_cast<int*>(smem + L::ok_off)[buf * kTileK + r] = r < rows && attend(r);
  }
}

// dot[r][c] = q_(4 tq + r) . k_(tk + 16 c) over the D (zero-padded) dims: a sequential f32 fma
// chain in dim order, as the warp kernel's. The two Q rows a warp reads at once are broadcasts;
// its 16 K rows are 16 distinct vectors in distinct banks (ldk / 4 odd).
template <int D>
__device__ __forceinline__ void tile_dots(const float* qs, const float* ks, int tq, int tk,
                                          float (&dot)[kThreadRows][kThreadKeys]) {
  constexpr int ld = D + 4;
#pragma unroll
  for (int r = 0; r < kThreadRows; ++r)
#pragma unroll
    for (int c = 0; c < kThreadKeys; ++c) dot[r][c] = 0.0f;
#pragma unroll 4
  for (int d = 0; d < D; d += 4) {
    float4 qv[kThreadRows], kv[kThreadKeys];
#pragma unroll
    for (int r = 0; r < kThreadRows; ++r)
      qv[r] = *reinterpret_cast<const float4*>(qs + (kThreadRows * tq + r) * ld + d);
#pragma unroll
    for (int c = 0; c < kThreadKeys; ++c)
      kv[c] = *reinterpret_cast<const float4*>(ks + (tk + kRowThreads * c) * ld + d);
#pragma unroll
    for (int r = 0; r < kThreadRows; ++r)
#pragma unroll
      for (int c = 0; c < kThreadKeys; ++c) {
        dot[r][c] = fmaf(qv[r].x, kv[c].x, dot[r][c]);
        dot[r][c] = fmaf(qv[r].y, kv[c].y, dot[r][c]);
        dot[r][c] = fmaf(qv[r].z, kv[c].z, dot[r][c]);
        dot[r][c] = fmaf(qv[r].w, kv[c].w, dot[r][c]);
      }
  }
}

// Max / sum over the 16 threads of a query row (lanes that differ in their low 4 bits): a
// fixed xor tree, so every one of them gets the same bits.
__device__ __forceinline__ float row_max(float v) {
#pragma unroll
  for (int o = 1; o < kRowThreads; o <<= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  return v;
}
__device__ __forceinline__ float row_sum(float v) {
#pragma unroll
  for (int o = 1; o < kRowThreads; o <<= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// The online-softmax state of a thread's rows: m (the row's, same in its 16 threads), the
// thread's part of l and its O columns.
template <int DV>
struct TiledRows {
  static constexpr int kCols = DV / kRowThreads;  // value dims per thread: 64 j + 4 tk + e
  float m[kThreadRows];
  float l[kThreadRows];
  float o[kThreadRows][kCols];
};

// Folds the tile's logits x (-inf where masked) into the rows: new max, rescale of l and O by
// exp(m_old - m_new), and x becomes the weight p = exp(x - m_new) (0 where masked). A tile
// whose max is -inf (all masked, or only -inf logits) computes the weights against 0 instead:
// they are 0, or NaN for a NaN logit (which then makes the row NaN through l, as the oracle).
// A NaN logit is also never the max (fmaxf), so it cannot hide the row's other keys.
template <int DV>
__device__ __forceinline__ void online_softmax(TiledRows<DV>& st, float (&x)[kThreadRows][kThreadKeys]) {
#pragma unroll
  for (int r = 0; r < kThreadRows; ++r) {
    const float mx = row_max(fmaxf(fmaxf(x[r][0], x[r][1]), fmaxf(x[r][2], x[r][3])));
    const float m_new = fmaxf(st.m[r], mx);
    const float m_use = m_new == -kInf ? 0.0f : m_new;
    // 0 before the first visible key (m = -inf); NaN once m is +inf (the oracle: exp(inf - inf)).
    const float alpha = expf(st.m[r] - m_use);
#pragma unroll
    for (int c = 0; c < kThreadKeys; ++c) x[r][c] = expf(x[r][c] - m_use);
    st.l[r] = st.l[r] * alpha + ((x[r][0] + x[r][1]) + (x[r][2] + x[r][3]));
#pragma unroll
    for (int j = 0; j < TiledRows<DV>::kCols; ++j) st.o[r][j] *= alpha;
    st.m[r] = m_new;
  }
}

__device__ __forceinline__ float component(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// O[r] += sum over the tile's keys kk (in order) of P[4 tq + r][kk] * V[kk][thread's dims].
// kSkip: the tile holds causally hidden keys; row r adds only the keys kk <= lim[r] (a hidden
// key's value is a real key of a later row and may be NaN: skipped, not weighted by 0).
template <int DV, bool kSkip>
__device__ __forceinline__ void add_pv(TiledRows<DV>& st, const float* ps, const float* vs, int tq, int tk,
                                       const int (&lim)[kThreadRows]) {
  constexpr int V4 = DV / 64;  // float4s per key row and thread: dims 64 j + 4 tk + e
#pragma unroll 2
  for (int k = 0; k < kTileK; k += 4) {
    float4 p4[kThreadRows];
#pragma unroll
    for (int r = 0; r < kThreadRows; ++r)
      p4[r] = *reinterpret_cast<const float4*>(ps + (kThreadRows * tq + r) * kLdp + k);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      float4 v4[V4];
#pragma unroll
      for (int j = 0; j < V4; ++j)
        v4[j] = *reinterpret_cast<const float4*>(vs + (k + kk) * DV + 64 * j + 4 * tk);
#pragma unroll
      for (int r = 0; r < kThreadRows; ++r) {
        if (kSkip && k + kk > lim[r]) continue;
        const float p = component(p4[r], kk);
#pragma unroll
        for (int j = 0; j < V4; ++j) {
          st.o[r][4 * j + 0] = fmaf(p, v4[j].x, st.o[r][4 * j + 0]);
          st.o[r][4 * j + 1] = fmaf(p, v4[j].y, st.o[r][4 * j + 1]);
          st.o[r][4 * j + 2] = fmaf(p, v4[j].z, st.o[r][4 * j + 2]);
          st.o[r][4 * j + 3] = fmaf(p, v4[j].w, st.o[r][4 * j + 3]);
        }
      }
    }
  }
}

// y = O / l for the thread's rows and dims (zeros and lse -inf for a row with l = 0: no visible
// key, or only -inf logits; l >= 1 otherwise, since the max's own weight is 1).
template <int DV>
__device__ __forceinline__ void store_tiled_rows(const TiledGeom& g, const TiledRows<DV>& st, int64_t bh,
                                                 int64_t q0, int tq, int tk) {
#pragma unroll
  for (int r = 0; r < kThreadRows; ++r) {
    const float l = row_sum(st.l[r]);  // all lanes: shuffles
    const int64_t i = q0 + kThreadRows * tq + r;
    if (i >= g.Nq) continue;
    const bool empty = l == 0.0f;
    float* out = g.out + (bh * g.Nq + i) * g.hv;
#pragma unroll
    for (int j = 0; j < TiledRows<DV>::kCols; ++j) {
      const int dim = 64 * (j / 4) + 4 * tk + j % 4;
      if (dim < g.hv) out[dim] = empty ? 0.0f : st.o[r][j] / l;
    }
    if (g.lse != nullptr && tk == 0) g.lse[bh * g.Nq + i] = empty ? -kInf : st.m[r] + logf(l);
  }
}

template <int D, int DV>
__global__ void __launch_bounds__(kTiledThreads, TiledLayout<D, DV>::min_blocks)
    attention_tiled_kernel(TiledGeom g) {
  using L = TiledLayout<D, DV>;
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const float* qs = smem + L::q_off;
  float* ps = smem + L::p_off;
  const int* key_ok = reinterpret_cast<const int*>(smem + L::ok_off);
  const int tq = int(threadIdx.x) / kRowThreads, tk = int(threadIdx.x) % kRowThreads;
  const int64_t shift = g.Nk - g.Nq;  // causal: key j visible to query i iff j <= i + shift

  for (int64_t t = blockIdx.x; t < g.BH * g.q_tiles; t += gridDim.x) {
    const int64_t bh = t / g.q_tiles, b = bh / g.H;
    const int64_t q0 = (g.q_tiles - 1 - t % g.q_tiles) * kTileQ;  // the longest causal tiles first
    const int q_rows = int(g.Nq - q0 < kTileQ ? g.Nq - q0 : kTileQ);
    int64_t k_end = g.Nk;  // keys past the block's last query's causal limit are never loaded
    if (g.causal && q0 + q_rows + shift < k_end) k_end = q0 + q_rows + shift > 0 ? q0 + q_rows + shift : 0;
    const int n_tiles = int((k_end + kTileK - 1) / kTileK);

    TiledRows<DV> st;
#pragma unroll
    for (int r = 0; r < kThreadRows; ++r) {
      st.m[r] = -kInf;
      st.l[r] = 0.0f;
#pragma unroll
      for (int j = 0; j < TiledRows<DV>::kCols; ++j) st.o[r][j] = 0.0f;
    }
    if (n_tiles > 0) {
      __syncthreads();  // the previous work item's readers of every buffer are done
      load_tile_async<D>(smem + L::q_off, L::ldq, g.q + (bh * g.Nq + q0) * g.hd, q_rows, g.hd, g.q_vec,
                         [](int) { return true; });
      load_kv_async<D, DV>(g, smem, 0, bh, b, 0, k_end);
      __pipeline_commit();
    }
    for (int kt = 0; kt < n_tiles; ++kt) {
      const int buf = kt & 1;
      const int64_t k0 = int64_t(kt) * kTileK;
      __pipeline_wait_prior(0);
      __syncthreads();  // tile kt is in; every thread is done with tile kt - 1 (buffer buf ^ 1, P)
      if (kt + 1 < n_tiles) load_kv_async<D, DV>(g, smem, buf ^ 1, bh, b, k0 + kTileK, k_end);
      __pipeline_commit();

      // Row r sees the tile's keys kk <= lim[r] under the causal rule (lim >= kTileK - 1: all).
      int lim[kThreadRows];
#pragma unroll
      for (int r = 0; r < kThreadRows; ++r) {
        const int64_t last = q0 + kThreadRows * tq + r + shift - k0;
        lim[r] = !g.causal || last >= kTileK ? kTileK : last < -1 ? -1 : int(last);
      }
      float x[kThreadRows][kThreadKeys];
      tile_dots<D>(qs, smem + L::k_off + buf * kTileK * L::ldk, tq, tk, x);
#pragma unroll
      for (int c = 0; c < kThreadKeys; ++c) {
        const int kk = tk + kRowThreads * c;
        const bool ok = key_ok[buf * kTileK + kk] != 0;
#pragma unroll
        for (int r = 0; r < kThreadRows; ++r) x[r][c] = ok && kk <= lim[r] ? g.scale * x[r][c] : -kInf;
      }
      online_softmax(st, x);
#pragma unroll
      for (int r = 0; r < kThreadRows; ++r)
#pragma unroll
        for (int c = 0; c < kThreadKeys; ++c)
          ps[(kThreadRows * tq + r) * kLdp + tk + kRowThreads * c] = x[r][c];
      __syncthreads();  // P is complete

      const float* vs = smem + L::v_off + buf * kTileK * DV;
      if (g.causal && k0 + kTileK - 1 > q0 + shift)  // block-uniform: some row hides some key here
        add_pv<DV, true>(st, ps, vs, tq, tk, lim);
      else
        add_pv<DV, false>(st, ps, vs, tq, tk, lim);
    }
    store_tiled_rows(g, st, bh, q0, tq, tk);
  }
}

// ---- warp kernel (fallback) ----

constexpr int kRowsPerWarp = 4;                 // query rows per warp
constexpr int kBlockQ = kWarps * kRowsPerWarp;  // queries per block
constexpr int kBlockK = 32;                     // keys per chunk: one per lane
constexpr int64_t kMaxHeadDim = 256;            // shared memory: Q and K tiles

struct AttentionGeom : DenseArgs {
  int64_t q_tiles;
  int hd4;  // hd rounded up to whole float4s (Q and K tiles are zero-padded to it)
  int ldk;  // K tile row stride: hd4, or hd4 + 4, so that ldk / 4 is odd (no bank conflicts)
};

// Shared memory of one attention block: Q tile, K tile, V tile, key mask flags.
int64_t attention_smem_bytes(int hd4, int ldk, int hv) {
  return (int64_t(kBlockQ) * hd4 + int64_t(kBlockK) * ldk + int64_t(kBlockK) * hv) * 4 + kBlockK * 4;
}

// dst[r * ld + c] = src[r * width + c] for r < rows, c < width, and 0 for the rest of the
// tile_rows x cols tile (padding rows and columns). All threads of the block.
__device__ __forceinline__ void stage_tile(float* dst, int ld, int tile_rows, int cols, const float* src,
                                           int64_t rows, int width) {
  for (int e = threadIdx.x; e < tile_rows * cols; e += blockDim.x) {
    const int r = e / cols, c = e % cols;
    dst[r * ld + c] = r < rows && c < width ? src[int64_t(r) * width + c] : 0.0f;
  }
}

// Lane's key (row `lane` of the K tile) against the warp's R query rows: R logits.
template <int R>
__device__ __forceinline__ void tile_logits(const float* qs, const float* ks, const AttentionGeom& g,
                                            float (&x)[R]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float4* krow = reinterpret_cast<const float4*>(ks + lane * g.ldk);
  const float4* q4 = reinterpret_cast<const float4*>(qs + warp * R * g.hd4);
  float dot[R];
#pragma unroll
  for (int r = 0; r < R; ++r) dot[r] = 0.0f;
  for (int d = 0; d < g.hd4 / 4; ++d) {
    const float4 kv = krow[d];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float4 qv = q4[r * (g.hd4 / 4) + d];  // same address in every lane: a broadcast
      dot[r] = fmaf(qv.x, kv.x, dot[r]);
      dot[r] = fmaf(qv.y, kv.y, dot[r]);
      dot[r] = fmaf(qv.z, kv.z, dot[r]);
      dot[r] = fmaf(qv.w, kv.w, dot[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) x[r] = g.scale * dot[r];
}

template <int C>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttentionGeom g) {
  constexpr int R = kRowsPerWarp;
  extern __shared__ float4 smem4[];
  float* qs = reinterpret_cast<float*>(smem4);                // [kBlockQ][hd4]
  float* ks = qs + kBlockQ * g.hd4;                           // [kBlockK][ldk]
  float* vs = ks + kBlockK * g.ldk;                           // [kBlockK][hv]
  int* key_ok = reinterpret_cast<int*>(vs + kBlockK * g.hv);  // [kBlockK]: not padding
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t shift = g.Nk - g.Nq;  // causal: key j visible to query i iff j <= i + shift

  for (int64_t t = blockIdx.x; t < g.BH * g.q_tiles; t += gridDim.x) {
    const int64_t bh = t / g.q_tiles, b = bh / g.H;
    const int64_t q0 = (g.q_tiles - 1 - t % g.q_tiles) * kBlockQ;  // the longest causal tiles first
    const int64_t q_rows = g.Nq - q0 < kBlockQ ? g.Nq - q0 : kBlockQ;
    int64_t k_end = g.Nk;
    if (g.causal && q0 + q_rows + shift < k_end) k_end = q0 + q_rows + shift;  // may be <= 0

    __syncthreads();  // the previous work item's readers of qs are done
    stage_tile(qs, g.hd4, kBlockQ, g.hd4, g.q + (bh * g.Nq + q0) * g.hd, q_rows, g.hd);

    Row<C> rows[R];
    for (int64_t k0 = 0; k0 < k_end; k0 += kBlockK) {
      const int64_t k_rows = k_end - k0 < kBlockK ? k_end - k0 : kBlockK;
      __syncthreads();  // the previous tile's readers are done (and qs is staged)
      stage_tile(ks, g.ldk, kBlockK, g.hd4, g.k + (bh * g.Nk + k0) * g.hd, k_rows, g.hd);
      stage_tile(vs, g.hv, kBlockK, g.hv, g.v + (bh * g.Nk + k0) * g.hv, k_rows, g.hv);
      if (threadIdx.x < kBlockK)
        key_ok[threadIdx.x] =
            threadIdx.x < k_rows && (g.mask == nullptr || g.mask[b * g.Nk + k0 + threadIdx.x] != 0);
      __syncthreads();

      float x[R], p[R];
      unsigned vis[R];
      tile_logits<R>(qs, ks, g, x);
      const int64_t j = k0 + lane;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t i = q0 + warp * R + r;
        const bool visible = i < g.Nq && key_ok[lane] != 0 && (!g.causal || j <= i + shift);
        vis[r] = fold_chunk(rows[r], x[r], visible, &p[r]);
      }
      add_values<R, C>(rows, p, vis, g.hv, [&](int jj) { return vs + jj * g.hv; });
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t i = q0 + warp * R + r;
      if (i >= g.Nq) continue;
      store_row(rows[r], g.out + (bh * g.Nq + i) * g.hv, g.hv);
      if (g.lse != nullptr && lane == 0) g.lse[bh * g.Nq + i] = row_lse(rows[r]);
    }
  }
}

// ---- host side ----

DenseArgs dense_args(const KernelArgs& args) {
  const AttentionAttrs& at = args.attr<AttentionAttrs>();
  const TensorDesc& q = args.inputs[0].desc;
  DenseArgs a{};
  a.q = static_cast<const float*>(args.inputs[0].data);
  a.k = static_cast<const float*>(args.inputs[1].data);
  a.v = static_cast<const float*>(args.inputs[2].data);
  a.mask = at.has_key_padding_mask ? static_cast<const uint8_t*>(args.inputs[3].data) : nullptr;
  a.out = static_cast<float*>(args.outputs[0].data);
  a.lse = at.with_lse ? static_cast<float*>(args.outputs[1].data) : nullptr;
  a.H = q.dim(1);
  a.BH = q.dim(0) * q.dim(1);
  a.Nq = q.dim(2);
  a.Nk = args.inputs[1].desc.dim(2);
  a.hd = int(q.dim(3));
  a.hv = int(args.inputs[2].desc.dim(3));
  a.scale = at.scale;
  a.causal = at.causal;
  return a;
}

// LONGRUN_CUDA_ATTENTION=warp: always the warp kernel (to test or time it). Read once.
bool warp_kernel_forced() {
  static const bool forced = [] {
    const char* e = std::getenv("LONGRUN_CUDA_ATTENTION");
    return e != nullptr && std::strcmp(e, "warp") == 0;
  }();
  return forced;
}

template <int D, int DV>
struct LaunchTiled {
  static Status run(const TiledGeom& g, Context* ctx) {
    using L = TiledLayout<D, DV>;
    // The dynamic shared memory limit is raised once per device (a per-context attribute).
    static std::atomic<uint64_t> raised{0};
    const uint64_t bit = uint64_t(1) << (ctx->device & 63);
    if ((raised.load() & bit) == 0) {
      LR_CUDA(cudaFuncSetAttribute(attention_tiled_kernel<D, DV>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   L::bytes));
      raised.fetch_or(bit);
    }
    attention_tiled_kernel<D, DV><<<blocks_for(g.BH * g.q_tiles), kTiledThreads, L::bytes, ctx->stream>>>(g);
    LR_CUDA_LAUNCHED("attention_tiled_kernel");
    return {};
  }
};

// The tiled kernel's shared memory for these dims (0: dims above its limit).
int tiled_smem_bytes(int64_t hd, int64_t hv) {
  if (hd > kMaxTiledDim || hv > kMaxTiledDim) return 0;
  if (hd <= 64) return hv <= 64 ? TiledLayout<64, 64>::bytes : TiledLayout<64, 128>::bytes;
  return hv <= 64 ? TiledLayout<128, 64>::bytes : TiledLayout<128, 128>::bytes;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

Status run_tiled(const KernelArgs& args) {
  TiledGeom g{};
  static_cast<DenseArgs&>(g) = dense_args(args);
  g.q_tiles = (g.Nq + kTileQ - 1) / kTileQ;
  g.q_vec = g.hd % 4 == 0 && aligned16(g.q);
  g.k_vec = g.hd % 4 == 0 && aligned16(g.k);
  g.v_vec = g.hv % 4 == 0 && aligned16(g.v);
  if (g.hd <= 64)
    return g.hv <= 64 ? LaunchTiled<64, 64>::run(g, args.ctx) : LaunchTiled<64, 128>::run(g, args.ctx);
  return g.hv <= 64 ? LaunchTiled<128, 64>::run(g, args.ctx) : LaunchTiled<128, 128>::run(g, args.ctx);
}

template <int C>
struct LaunchAttention {
  static Status run(const AttentionGeom& g, int64_t smem, Context* ctx) {
    if (smem > 48 * 1024)
      LR_CUDA(
          cudaFuncSetAttribute(attention_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    attention_kernel<C><<<blocks_for(g.BH * g.q_tiles), kThreads, size_t(smem), ctx->stream>>>(g);
    LR_CUDA_LAUNCHED("attention_kernel");
    return {};
  }
};

Status run_warp(const KernelArgs& args) {
  AttentionGeom g{};
  static_cast<DenseArgs&>(g) = dense_args(args);
  g.q_tiles = (g.Nq + kBlockQ - 1) / kBlockQ;
  g.hd4 = (g.hd + 3) / 4 * 4;
  g.ldk = g.hd4 % 8 == 4 ? g.hd4 : g.hd4 + 4;
  const int64_t smem = attention_smem_bytes(g.hd4, g.ldk, g.hv);
  if (smem > int64_t(args.ctx->props.sharedMemPerBlockOptin))
    return unsupported("attention: head dims " + std::to_string(g.hd) + " / " + std::to_string(g.hv) +
                       " need " + std::to_string(smem) +
                       " bytes of shared memory per block, the device has " +
                       std::to_string(args.ctx->props.sharedMemPerBlockOptin));
  return dispatch_value_chunks<LaunchAttention>(g.hv, g, smem, args.ctx);
}

bool attention_supports(const Graph& graph, const Node& node, std::string* why) {
  return kv_dtype_supported("attention", graph, node, why) &&
         dims_supported("attention", in_dim(graph, node, 0, 3), kMaxHeadDim, in_dim(graph, node, 2, 3), why);
}

Status run_attention(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_kv_dtype("attention", args));
  LR_RETURN_IF_ERROR(check_contiguous(args, "attention"));
  if (outputs_empty(args)) return {};
  const int64_t hd = args.inputs[0].desc.dim(3), hv = args.inputs[2].desc.dim(3);
  std::string why;
  if (!dims_supported("attention", hd, kMaxHeadDim, hv, &why)) return unsupported(why);
  const int tiled_bytes = tiled_smem_bytes(hd, hv);
  if (!warp_kernel_forced() && tiled_bytes > 0 &&
      tiled_bytes <= int64_t(args.ctx->props.sharedMemPerBlockOptin))
    return run_tiled(args);
  return run_warp(args);
}

}  // namespace

Kernel make_kernel_attention() { return {run_attention, nullptr, attention_supports}; }

}  // namespace longrun::cuda
