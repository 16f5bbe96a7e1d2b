// CUDA kernels of sparse_attention (keys gathered by index) and axial_attention (own row's keys
// + one column slot per row). Semantics: attrs.h; oracle: ops/reference/attention.cpp. The dense
// attention op is in attention_dense.cu; both use the online softmax of attention.h.
//
// A warp per query: the query row is staged in shared memory, keys and values are read in
// place from global memory (the key set differs per query). Keys are folded 32 at a time (lane
// j computes slot j's logit scale * (q . k_j), a sequential f32 fma chain over the head dim),
// then the lanes split the value dims (lane + 32 c) and add p_j * v_j key by key in index
// order (attention.h: fold_chunk, add_values). Every reduction has a fixed order, so results
// are the same bits run to run.
//
// A masked slot (padding, causal, -1 index) is skipped outright, as in the oracle. Limits
// (supports): value dim <= 256 (8 register accumulators per lane), head dim <= 1024 (one
// query row per warp in shared memory).
#include <cmath>
#include <cstdint>
#include <string>

#include "cuda/attention.h"
#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {
namespace {

using namespace attention_detail;  // NOLINT: the shared helpers of the attention kernels

constexpr int64_t kMaxGatherHeadDim = 1024;  // shared memory: one q row per warp

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

bool sparse_attention_supports(const Graph& graph, const Node& node, std::string* why) {
  return kv_dtype_supported("sparse_attention", graph, node, why) &&
         dims_supported("sparse_attention", in_dim(graph, node, 0, 3), kMaxGatherHeadDim,
                        in_dim(graph, node, 2, 3), why);
}

bool axial_attention_supports(const Graph& graph, const Node& node, std::string* why) {
  // vs (input 4) has hv in both forms.
  return dims_supported("axial_attention", in_dim(graph, node, 0, 3), kMaxGatherHeadDim,
                        in_dim(graph, node, 4, 3), why);
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
                      flat_index_string(ix.desc, err.index) + ": index " +
                      std::to_string(int64_t(err.value)) + " out of range [-1, " + std::to_string(nk) + ")");
}

Status run_sparse_attention(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_kv_dtype("sparse_attention", args));
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

Kernel make_kernel_sparse_attention() { return {run_sparse_attention, nullptr, sparse_attention_supports}; }
Kernel make_kernel_axial_attention() { return {run_axial_attention, nullptr, axial_attention_supports}; }

}  // namespace longrun::cuda
