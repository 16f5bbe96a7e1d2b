// What the cuda attention kernels share (attention_dense.cu: attention; attention.cu:
// sparse_attention and axial_attention): the per-warp online softmax of one query row over
// chunks of up to 32 keys, and the host-side launch and shape helpers. Included only by .cu
// files (device code).
//
// The online softmax keeps per row a running max m of the logits folded so far (-inf: none
// yet), the sum l of exp(logit - m) and the accumulator sum exp(logit - m) * value; y = acc / l
// at the end. Every reduction has a fixed order, so results are the same bits run to run. As in
// the oracle, a masked key is skipped outright (never weighted by 0: its value may be NaN); a
// NaN logit of a visible key makes its row NaN; a row with no visible key gets zeros and
// log-sum-exp -inf.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda::attention_detail {

constexpr unsigned kFull = 0xffffffffu;
constexpr float kInf = INFINITY;
constexpr float kNanF = NAN;
constexpr int kWarps = 8;  // warps per block of the warp-per-row kernels
constexpr int kThreads = kWarps * 32;
constexpr int kMaxValueDim = 256;                 // warp kernels: 8 accumulators per lane
constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // blocks stride over the work beyond this

// ---- the online softmax of one query row, a warp per row ----

// Per row and lane: m and l (the same in every lane) and the lane's share (dims lane + 32 c)
// of the accumulator.
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
    row.m = row.l = kNanF;
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

// ---- host side ----

inline bool outputs_empty(const KernelArgs& args) {
  for (const TensorView& v : args.outputs)
    if (v.desc.numel() > 0) return false;
  return true;
}

inline unsigned blocks_for(int64_t items) { return unsigned(items < kMaxBlocks ? items : kMaxBlocks); }

// Launches kernel<C> for the value-dim chunk count C = ceil(hv / 32) rounded up to 1, 2, 4 or 8.
template <template <int> class Launch, typename... Args>
Status dispatch_value_chunks(int hv, Args&&... args) {
  if (hv <= 32) return Launch<1>::run(args...);
  if (hv <= 64) return Launch<2>::run(args...);
  if (hv <= 128) return Launch<4>::run(args...);
  return Launch<8>::run(args...);
}

// Whether head dim hd and value dim hv fit the kernels (the value accumulators live in
// registers, the query rows in shared memory).
inline bool dims_supported(const char* op, int64_t hd, int64_t max_hd, int64_t hv, std::string* why) {
  if (hv > kMaxValueDim || hd > max_hd) {
    if (why != nullptr)  // supports may be asked without a reason slot
      *why = std::string(op) + ": head dim " + std::to_string(hd) + " / value dim " + std::to_string(hv) +
             " above the cuda kernel's limits (" + std::to_string(max_hd) + " / " +
             std::to_string(kMaxValueDim) + ")";
    return false;
  }
  return true;
}

inline int64_t in_dim(const Graph& graph, const Node& node, int input, int axis) {
  return graph.value(node.inputs[size_t(input)]).desc.dim(axis);
}

// Whether k (input 1) and v (input 2) are f32: the kernels read f32 K and V only, so a bf16
// KV (which the op allows) is refused, naming the op and the dtype.
inline bool kv_dtype_supported(const char* op, DType k, DType v, std::string* why) {
  if (k == DType::f32 && v == DType::f32) return true;
  if (why != nullptr)
    *why = std::string(op) + ": k/v dtype " + std::string(dtype_name(k)) + "/" + std::string(dtype_name(v)) +
           " is not supported by the cuda backend (f32 only; bf16 K and V run on the cpu and reference "
           "backends)";
  return false;
}
inline bool kv_dtype_supported(const char* op, const Graph& graph, const Node& node, std::string* why) {
  return kv_dtype_supported(op, graph.value(node.inputs[1]).desc.dtype(),
                            graph.value(node.inputs[2]).desc.dtype(), why);
}
inline Status check_kv_dtype(const char* op, const KernelArgs& args) {
  std::string why;
  if (!kv_dtype_supported(op, args.inputs[1].desc.dtype(), args.inputs[2].desc.dtype(), &why))
    return unsupported(why);
  return {};
}

}  // namespace longrun::cuda::attention_detail
