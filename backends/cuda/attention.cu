// CUDA kernels of attention (dense, fused), sparse_attention (keys gathered by index) and
// axial_attention (own row's keys + one column slot per row). Semantics: attrs.h; oracle:
// ops/reference/attention.cpp.
//
// All three run one online softmax per query (running max m, sum l, accumulator O in f32,
// y = O / l at the end) over chunks of up to 32 keys, with a warp per chunk: lane j computes
// key j's logit scale * (q . k_j) (an f32 fma chain over the head dim), the warp folds the
// chunk's max and sum by fixed xor-shuffle trees, and then the lanes split the value dims
// (lane + 32 c) and add p_j * v_j key by key in index order. Every reduction has a fixed
// order, so results are the same bits run to run.
//  - attention: a block (8 warps) per (b, h, tile of 32 queries), 4 query rows per warp; the
//    block streams K and V through shared memory in tiles of 32 keys (tiles past the causal
//    limit of the block's last query are skipped).
//  - sparse_attention / axial_attention: a warp per query, keys and values read in place
//    from global memory (the key set differs per query).
//
// As in the oracle, a masked key (padding, causal, -1 slot) is skipped outright: its logit and
// value are never combined with anything, so a NaN behind a mask cannot leak in. A NaN logit
// of a visible key makes its whole row NaN (as the oracle's softmax does); a row with no
// visible key gets zeros and log-sum-exp -inf.
//
// Limits (supports): value dim <= 256 (8 register accumulators per lane); head dim <= 256 for
// attention (Q and K tiles in shared memory, up to ~97 KiB), <= 1024 for the gather kernels.
#include <cmath>
#include <cstdint>
#include <string>

#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr float kInf = INFINITY;
constexpr float kNaN = NAN;
constexpr int kWarps = 8;  // warps per block, every kernel here
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 4;                   // attention: query rows per warp
constexpr int kBlockQ = kWarps * kRowsPerWarp;    // attention: queries per block
constexpr int kBlockK = 32;                       // keys per chunk: one per lane
constexpr int kMaxValueDim = 256;                 // 8 accumulators per lane
constexpr int64_t kMaxAttentionHeadDim = 256;     // shared memory: Q and K tiles
constexpr int64_t kMaxGatherHeadDim = 1024;       // shared memory: one q row per warp
constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // blocks stride over the work beyond this

// ---- the online softmax of one query row, shared by the three kernels ----

// Per row and lane: the running max of the logits folded so far (-inf: none yet), the sum of
// exp(logit - m), and the lane's share (dims lane + 32 c) of sum exp(logit - m) * value.
// m and l are the same in every lane.
template <int C>
struct Row {
  float m = -kInf;
  float l = 0.0f;
  float acc[C] = {};
};

// Folds one chunk of up to 32 keys (lane j: key j's logit x, when `visible`) into the row's
// running max and sum, rescaling l and acc to the new max. Returns the visible keys' lane mask
// (0 when there is nothing to add to acc) and sets *p to the lane's weight exp(x - m).
// Warp-uniform: call from all 32 lanes.
template <int C>
__device__ __forceinline__ unsigned fold_chunk(Row<C>& row, float x, bool visible, float* p) {
  *p = 0.0f;
  const unsigned vis = __ballot_sync(kFull, visible);
  if (vis == 0) return 0;
  if (__any_sync(kFull, visible && isnan(x))) {  // the oracle: a NaN logit makes the row NaN
    row.m = row.l = kNaN;
    return 0;
  }
  const float m_new = fmaxf(row.m, warp_max(visible ? x : -kInf));
  if (m_new == -kInf) return 0;  // only -inf logits so far: weight 0 each
  // 0 when nothing was folded yet (exp(-inf)); NaN when the row is already NaN (or m was +inf,
  // which the oracle also turns into NaN: exp(inf - inf)).
  const float alpha = expf(row.m - m_new);
  *p = visible ? expf(x - m_new) : 0.0f;
  row.l = row.l * alpha + warp_sum(*p);
#pragma unroll
  for (int c = 0; c < C; ++c) row.acc[c] *= alpha;
  row.m = m_new;
  return vis;
}

// acc[r] += p[r]_j * value_j for the keys j of vis[r], in key order, for R rows that share
// the chunk's keys; value_row(j) is key j's value row (called by all lanes with the same j).
// A key a row does not see is skipped, not weighted by 0 (its value may be NaN).
template <int R, int C, typename ValueRow>
__device__ __forceinline__ void add_values(Row<C> (&rows)[R], const float (&p)[R], const unsigned (&vis)[R],
                                           int hv, ValueRow value_row) {
  const int lane = threadIdx.x & 31;
  unsigned keys = 0;
#pragma unroll
  for (int r = 0; r < R; ++r) keys |= vis[r];
  while (keys != 0) {
    const int j = __ffs(keys) - 1;
    keys &= keys - 1;
    const float* v = value_row(j);
    float val[C];
#pragma unroll
    for (int c = 0; c < C; ++c) val[c] = lane + 32 * c < hv ? v[lane + 32 * c] : 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float pj = __shfl_sync(kFull, p[r], j);
      if ((vis[r] >> j) & 1u) {
#pragma unroll
        for (int c = 0; c < C; ++c) rows[r].acc[c] = fmaf(pj, val[c], rows[r].acc[c]);
      }
    }
  }
}

// y = acc / l, or zeros for a row that saw no key.
template <int C>
__device__ __forceinline__ void store_row(const Row<C>& row, float* out, int hv) {
  const int lane = threadIdx.x & 31;
  const bool empty = row.m == -kInf;
#pragma unroll
  for (int c = 0; c < C; ++c)
    if (lane + 32 * c < hv) out[lane + 32 * c] = empty ? 0.0f : row.acc[c] / row.l;
}

// log sum_j exp(logit_j) = m + log(l); -inf for a row that saw no key (NaN stays NaN).
template <int C>
__device__ __forceinline__ float row_lse(const Row<C>& row) {
  return row.m == -kInf ? -kInf : row.m + logf(row.l);
}

// ---- attention ----

struct AttentionGeom {
  const float* q;
  const float* k;
  const float* v;
  const uint8_t* mask;  // [B, Nk] or null
  float* out;
  float* lse;  // [B, H, Nq] or null
  int64_t BH, H, Nq, Nk, q_tiles;
  int hd, hv;
  int hd4;  // hd rounded up to whole float4s (Q and K tiles are zero-padded to it)
  int ldk;  // K tile row stride: hd4, or hd4 + 4, so that ldk / 4 is odd (no bank conflicts)
  float scale;
  bool causal;
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

// ---- sparse_attention and axial_attention: a warp per query, keys gathered in place ----

// One gathered key: its key and value rows, or key == null when the query does not see it.
struct Slot {
  const float* key = nullptr;
  const float* value = nullptr;
};

// q . key over hd dims, sequential f32 fma (q in shared memory: a broadcast read).
__device__ __forceinline__ float dot_row(const float* q, const float* key, int hd) {
  float acc = 0.0f;
  for (int d = 0; d < hd; ++d) acc = fmaf(q[d], key[d], acc);
  return acc;
}

// Folds `count` keys, slot(s) for s in [0, count), into the row, 32 per chunk (lane s % 32
// computes slot s's logit). Warp-uniform.
template <int C, typename SlotAt>
__device__ __forceinline__ void fold_slots(Row<C> (&row)[1], const float* q, int hd, int hv, float scale,
                                           int64_t count, SlotAt slot_at) {
  const int lane = threadIdx.x & 31;
  for (int64_t s0 = 0; s0 < count; s0 += 32) {
    const Slot slot = s0 + lane < count ? slot_at(s0 + lane) : Slot{};
    const bool visible = slot.key != nullptr;
    const float x = visible ? scale * dot_row(q, slot.key, hd) : 0.0f;
    float p[1];
    unsigned vis[1];
    vis[0] = fold_chunk(row[0], x, visible, &p[0]);
    add_values<1, C>(row, p, vis, hv, [&](int j) {
      return reinterpret_cast<const float*>(
          __shfl_sync(kFull, reinterpret_cast<unsigned long long>(slot.value), j));
    });
  }
}

// The warp's query q row (hd floats at src) into its shared-memory row.
__device__ __forceinline__ void stage_query(float* dst, const float* src, int hd) {
  __syncwarp();  // the previous query's readers are done
  for (int d = threadIdx.x & 31; d < hd; d += 32) dst[d] = src[d];
  __syncwarp();
}

struct SparseGeom {
  const float* q;
  const float* k;
  const float* v;
  const int32_t* idx;  // [IB, IH, Nq, kk]
  float* out;
  int64_t BH, H, Nq, Nk, IB, IH, kk;
  int hd, hv;
  float scale;
};

template <int C>
__global__ void __launch_bounds__(kThreads) sparse_attention_kernel(SparseGeom g) {
  extern __shared__ float q_smem[];  // [kWarps][hd]
  const int warp = threadIdx.x >> 5;
  float* qrow = q_smem + warp * g.hd;
  for (int64_t qi = int64_t(blockIdx.x) * kWarps + warp; qi < g.BH * g.Nq;
       qi += int64_t(gridDim.x) * kWarps) {
    const int64_t bh = qi / g.Nq, i = qi % g.Nq, b = bh / g.H, h = bh % g.H;
    stage_query(qrow, g.q + qi * g.hd, g.hd);
    // indices broadcast over batch and heads where their dim is 1.
    const int32_t* ix = g.idx + (((g.IB == 1 ? 0 : b) * g.IH + (g.IH == 1 ? 0 : h)) * g.Nq + i) * g.kk;
    Row<C> row[1];
    fold_slots(row, qrow, g.hd, g.hv, g.scale, g.kk, [&](int64_t s) {
      const int64_t j = ix[s];
      if (j < 0 || j >= g.Nk) return Slot{};  // -1: unused (anything else was rejected before)
      return Slot{g.k + (bh * g.Nk + j) * g.hd, g.v + (bh * g.Nk + j) * g.hv};
    });
    store_row(row[0], g.out + qi * g.hv, g.hv);
  }
}

// The flat position of the first index outside [-1, nk) into *first (min over all), for the
// error message that names the first bad index as the oracle does.
__global__ void find_bad_index_kernel(const int32_t* idx, int64_t n, int64_t nk, unsigned long long* first) {
  LR_GRID_STRIDE(e, n) {
    const int64_t j = idx[e];
    if (j < -1 || j >= nk) atomicMin(first, static_cast<unsigned long long>(e));
  }
}

__global__ void report_bad_index_kernel(const int32_t* idx, const unsigned long long* first,
                                        DeviceError* err) {
  const unsigned long long e = *first;
  if (e != ~0ull) report_error(err, kOutOfRange, 3, static_cast<long long>(e), double(idx[e]));
}

struct AxialGeom {
  const float* q;
  const float* k;  // has_direct_state: y0 [B, H, N, hv]
  const float* v;  // has_direct_state: lse0 [B, H, N]
  const float* ks;
  const float* vs;
  const uint8_t* mask;  // [B, N] or null
  float* out;
  int64_t BH, H, N, segment, n;
  int hd, hv;
  float scale;
  bool causal, direct_state;
};

template <int C>
__global__ void __launch_bounds__(kThreads) axial_attention_kernel(AxialGeom g) {
  extern __shared__ float q_smem[];  // [kWarps][hd]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* qrow = q_smem + warp * g.hd;
  for (int64_t qi = int64_t(blockIdx.x) * kWarps + warp; qi < g.BH * g.N; qi += int64_t(gridDim.x) * kWarps) {
    const int64_t bh = qi / g.N, i = qi % g.N, b = bh / g.H;
    const int64_t u = i / g.segment, t = i % g.segment;  // row u, column t
    const int64_t base = bh * g.N;                       // position 0 of (b, h)
    auto real = [&](int64_t pos) { return g.mask == nullptr || g.mask[b * g.N + pos] != 0; };
    stage_query(qrow, g.q + qi * g.hd, g.hd);
    Row<C> row[1];
    if (g.direct_state) {
      // The direct keys' softmax is one slot: logit lse0 (already scaled), value y0. Not read
      // at all when lse0 = -inf (no direct key: y0 may hold anything there).
      const float lse0 = g.v[qi];
      if (lse0 != -kInf) {
        row[0].m = lse0;
        row[0].l = expf(lse0 - lse0);  // 1; NaN for a NaN or +inf lse0, as the oracle's softmax
#pragma unroll
        for (int c = 0; c < C; ++c)
          if (lane + 32 * c < g.hv) row[0].acc[c] = g.k[qi * g.hv + lane + 32 * c];
      }
    } else {  // direct keys: the own row, j <= t when causal
      fold_slots(row, qrow, g.hd, g.hv, g.scale, g.segment, [&](int64_t j) {
        const int64_t pos = u * g.segment + j;
        if (!real(pos) || (g.causal && j > t)) return Slot{};
        return Slot{g.k + (base + pos) * g.hd, g.v + (base + pos) * g.hv};
      });
    }
    // column slots: one per row r of the own column, r < u when causal (else the own row too)
    fold_slots(row, qrow, g.hd, g.hv, g.scale, g.n, [&](int64_t r) {
      const int64_t pos = r * g.segment + t;
      if (!real(pos) || (g.causal && r >= u)) return Slot{};
      return Slot{g.ks + (base + pos) * g.hd, g.vs + (base + pos) * g.hv};
    });
    store_row(row[0], g.out + qi * g.hv, g.hv);
  }
}

// ---- host side ----

bool outputs_empty(const KernelArgs& args) {
  for (const TensorView& v : args.outputs)
    if (v.desc.numel() > 0) return false;
  return true;
}

unsigned blocks_for(int64_t items) { return unsigned(items < kMaxBlocks ? items : kMaxBlocks); }

// Launches kernel<C> for the value-dim chunk count C = ceil(hv / 32) rounded up to 1, 2, 4 or 8.
template <template <int> class Launch, typename... Args>
Status dispatch_value_chunks(int hv, Args&&... args) {
  if (hv <= 32) return Launch<1>::run(args...);
  if (hv <= 64) return Launch<2>::run(args...);
  if (hv <= 128) return Launch<4>::run(args...);
  return Launch<8>::run(args...);
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

template <int C>
struct LaunchSparse {
  static Status run(const SparseGeom& g, Context* ctx) {
    const int64_t items = (g.BH * g.Nq + kWarps - 1) / kWarps;
    sparse_attention_kernel<C><<<blocks_for(items), kThreads, size_t(kWarps) * g.hd * 4, ctx->stream>>>(g);
    LR_CUDA_LAUNCHED("sparse_attention_kernel");
    return {};
  }
};

template <int C>
struct LaunchAxial {
  static Status run(const AxialGeom& g, Context* ctx) {
    const int64_t items = (g.BH * g.N + kWarps - 1) / kWarps;
    axial_attention_kernel<C><<<blocks_for(items), kThreads, size_t(kWarps) * g.hd * 4, ctx->stream>>>(g);
    LR_CUDA_LAUNCHED("axial_attention_kernel");
    return {};
  }
};

// Whether head dim hd and value dim hv fit the kernels (the value accumulators live in
// registers, the query rows in shared memory).
bool dims_supported(const char* op, int64_t hd, int64_t max_hd, int64_t hv, std::string* why) {
  if (hv > kMaxValueDim || hd > max_hd) {
    if (why != nullptr)  // supports may be asked without a reason slot
      *why = std::string(op) + ": head dim " + std::to_string(hd) + " / value dim " + std::to_string(hv) +
             " above the cuda kernel's limits (" + std::to_string(max_hd) + " / " +
             std::to_string(kMaxValueDim) + ")";
    return false;
  }
  return true;
}

int64_t in_dim(const Graph& graph, const Node& node, int input, int axis) {
  return graph.value(node.inputs[size_t(input)]).desc.dim(axis);
}

bool attention_supports(const Graph& graph, const Node& node, std::string* why) {
  return dims_supported("attention", in_dim(graph, node, 0, 3), kMaxAttentionHeadDim,
                        in_dim(graph, node, 2, 3), why);
}

bool sparse_attention_supports(const Graph& graph, const Node& node, std::string* why) {
  return dims_supported("sparse_attention", in_dim(graph, node, 0, 3), kMaxGatherHeadDim,
                        in_dim(graph, node, 2, 3), why);
}

bool axial_attention_supports(const Graph& graph, const Node& node, std::string* why) {
  // vs (input 4) has hv in both forms.
  return dims_supported("axial_attention", in_dim(graph, node, 0, 3), kMaxGatherHeadDim,
                        in_dim(graph, node, 4, 3), why);
}

Status run_attention(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "attention"));
  if (outputs_empty(args)) return {};
  const AttentionAttrs& at = args.attr<AttentionAttrs>();
  const TensorDesc& q = args.inputs[0].desc;
  AttentionGeom g{};
  g.q = static_cast<const float*>(args.inputs[0].data);
  g.k = static_cast<const float*>(args.inputs[1].data);
  g.v = static_cast<const float*>(args.inputs[2].data);
  g.mask = at.has_key_padding_mask ? static_cast<const uint8_t*>(args.inputs[3].data) : nullptr;
  g.out = static_cast<float*>(args.outputs[0].data);
  g.lse = at.with_lse ? static_cast<float*>(args.outputs[1].data) : nullptr;
  g.H = q.dim(1);
  g.BH = q.dim(0) * q.dim(1);
  g.Nq = q.dim(2);
  g.Nk = args.inputs[1].desc.dim(2);
  g.q_tiles = (g.Nq + kBlockQ - 1) / kBlockQ;
  std::string why;
  if (!dims_supported("attention", q.dim(3), kMaxAttentionHeadDim, args.inputs[2].desc.dim(3), &why))
    return unsupported(why);
  g.hd = int(q.dim(3));
  g.hv = int(args.inputs[2].desc.dim(3));
  g.hd4 = (g.hd + 3) / 4 * 4;
  g.ldk = g.hd4 % 8 == 4 ? g.hd4 : g.hd4 + 4;
  g.scale = at.scale;
  g.causal = at.causal;
  const int64_t smem = attention_smem_bytes(g.hd4, g.ldk, g.hv);
  if (smem > int64_t(args.ctx->props.sharedMemPerBlockOptin))
    return unsupported("attention: head dims " + std::to_string(g.hd) + " / " + std::to_string(g.hv) +
                       " need " + std::to_string(smem) +
                       " bytes of shared memory per block, the device has " +
                       std::to_string(args.ctx->props.sharedMemPerBlockOptin));
  return dispatch_value_chunks<LaunchAttention>(g.hv, g, smem, args.ctx);
}

// "[1,0,3]": the multi-index of flat element e of dims (the oracle's index_string).
std::string index_string(const TensorDesc& d, int64_t e) {
  std::string s;
  for (int i = d.rank() - 1; i >= 0; --i) {
    s = std::to_string(e % d.dim(i)) + (s.empty() ? "" : ",") + s;
    e /= d.dim(i);
  }
  return "[" + s + "]";
}

// Checks every index before anything is written, as the oracle does; the error names the
// first bad index in row-major order.
Status check_indices(const KernelArgs& args) {
  const TensorView& ix = args.inputs[3];
  const int64_t n = ix.desc.numel(), nk = args.inputs[1].desc.dim(2);
  if (n == 0) return {};
  Context* ctx = args.ctx;
  LR_ASSIGN_OR_RETURN(void* scratch, ctx->scratch(sizeof(unsigned long long)));
  auto* first = static_cast<unsigned long long*>(scratch);
  const int32_t* idx = static_cast<const int32_t*>(ix.data);
  LR_RETURN_IF_ERROR(ctx->reset_error());
  LR_CUDA(cudaMemsetAsync(first, 0xff, sizeof(unsigned long long), ctx->stream));
  find_bad_index_kernel<<<grid_for(n, kThreads, ctx->props.multiProcessorCount), kThreads, 0, ctx->stream>>>(
      idx, n, nk, first);
  LR_CUDA_LAUNCHED("find_bad_index_kernel");
  report_bad_index_kernel<<<1, 1, 0, ctx->stream>>>(idx, first, ctx->device_error());
  LR_CUDA_LAUNCHED("report_bad_index_kernel");
  LR_ASSIGN_OR_RETURN(DeviceError err, ctx->take_error());
  if (err.code == kNoError) return {};
  return out_of_range("sparse_attention: input 3 (indices " + ix.desc.to_string() + ") at " +
                      index_string(ix.desc, err.index) + ": index " + std::to_string(int64_t(err.value)) +
                      " out of range [-1, " + std::to_string(nk) + ")");
}

Status run_sparse_attention(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "sparse_attention"));
  LR_RETURN_IF_ERROR(check_indices(args));
  if (outputs_empty(args)) return {};
  const TensorDesc& q = args.inputs[0].desc;
  const TensorDesc& ix = args.inputs[3].desc;
  std::string why;
  if (!dims_supported("sparse_attention", q.dim(3), kMaxGatherHeadDim, args.inputs[2].desc.dim(3), &why))
    return unsupported(why);
  SparseGeom g{};
  g.q = static_cast<const float*>(args.inputs[0].data);
  g.k = static_cast<const float*>(args.inputs[1].data);
  g.v = static_cast<const float*>(args.inputs[2].data);
  g.idx = static_cast<const int32_t*>(args.inputs[3].data);
  g.out = static_cast<float*>(args.outputs[0].data);
  g.H = q.dim(1);
  g.BH = q.dim(0) * q.dim(1);
  g.Nq = q.dim(2);
  g.Nk = args.inputs[1].desc.dim(2);
  g.IB = ix.dim(0);
  g.IH = ix.dim(1);
  g.kk = ix.dim(3);
  g.hd = int(q.dim(3));
  g.hv = int(args.inputs[2].desc.dim(3));
  g.scale = args.attr<SparseAttentionAttrs>().scale;
  return dispatch_value_chunks<LaunchSparse>(g.hv, g, args.ctx);
}

Status run_axial_attention(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "axial_attention"));
  if (outputs_empty(args)) return {};
  const AxialAttentionAttrs& at = args.attr<AxialAttentionAttrs>();
  const TensorDesc& q = args.inputs[0].desc;
  std::string why;
  if (!dims_supported("axial_attention", q.dim(3), kMaxGatherHeadDim, args.inputs[4].desc.dim(3), &why))
    return unsupported(why);
  AxialGeom g{};
  g.q = static_cast<const float*>(args.inputs[0].data);
  g.k = static_cast<const float*>(args.inputs[1].data);
  g.v = static_cast<const float*>(args.inputs[2].data);
  g.ks = static_cast<const float*>(args.inputs[3].data);
  g.vs = static_cast<const float*>(args.inputs[4].data);
  g.mask = at.has_key_padding_mask ? static_cast<const uint8_t*>(args.inputs[5].data) : nullptr;
  g.out = static_cast<float*>(args.outputs[0].data);
  g.H = q.dim(1);
  g.BH = q.dim(0) * q.dim(1);
  g.N = q.dim(2);
  g.segment = at.segment;
  g.n = g.N / at.segment;
  g.hd = int(q.dim(3));
  g.hv = int(args.inputs[4].desc.dim(3));
  g.scale = at.scale;
  g.causal = at.causal;
  g.direct_state = at.has_direct_state;
  return dispatch_value_chunks<LaunchAxial>(g.hv, g, args.ctx);
}

}  // namespace

Kernel make_kernel_attention() { return {run_attention, nullptr, attention_supports}; }
Kernel make_kernel_sparse_attention() { return {run_sparse_attention, nullptr, sparse_attention_supports}; }
Kernel make_kernel_axial_attention() { return {run_axial_attention, nullptr, axial_attention_supports}; }

}  // namespace longrun::cuda
