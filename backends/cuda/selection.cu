// CUDA kernels of topk_mask and topk_indices (semantics: attrs.h; oracle:
// ops/reference/selection.cpp). Both are exact (tolerance 0).
//
// Both rank every element of a row under the ops' one total order: larger value first, every
// NaN above +inf, equal values (NaN vs NaN, -0 vs +0 included) by ascending index. The rank
// of element i is the number of elements that beat it, so ranks are a permutation of 0..n-1
// and equal the element's position in the reference's sorted order, whatever the sort.
//
// Parallelisation: one block per row (blocks stride over the rows); each thread takes one
// element i at a time and counts the elements that beat it, reading the row's order keys
// from shared memory in tiles of kTile (loaded once when the row fits in one tile), so any
// row length works. O(n^2 / threads) per row: simple and exact. topk_mask keeps rank < k;
// topk_indices writes i at output slot rank when rank < k. Neither runs in place (schema
// inplace_input = -1).
#include <math_constants.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {
namespace {

constexpr int kMaxThreads = 256;
constexpr int kTile = 4096;                       // order keys in shared memory (16 KiB)
constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // blocks stride over the rows beyond this

// A row: x as AxisLines around the axis (cuda_kernel.h), one line per row.

// Unsigned key whose order is the ops' value order: larger value larger key, every NaN the
// largest key, -0 the key of +0 (index order then breaks all ties).
__device__ __forceinline__ uint32_t order_key(float v) {
  if (isnan(v)) return 0xffffffffu;
  const uint32_t u = __float_as_uint(v == 0.0f ? 0.0f : v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// topk_mask's output at the element's own position: u8 1/0, or the score / -inf.
struct MaskEmit {
  void* y;
  bool scores;
  int64_t k;
  __device__ void operator()(int64_t row_base, int64_t inner, int64_t, int64_t i, int64_t rank,
                             float v) const {
    const int64_t at = row_base + i * inner;
    const bool kept = rank < k;
    if (scores)
      static_cast<float*>(y)[at] = kept ? v : -CUDART_INF_F;
    else
      static_cast<uint8_t*>(y)[at] = kept ? 1 : 0;
  }
};

// topk_indices' output: index i in slot `rank` of the k-long output row.
struct IndexEmit {
  int32_t* y;
  int64_t k;
  __device__ void operator()(int64_t, int64_t inner, int64_t out_base, int64_t i, int64_t rank, float) const {
    if (rank < k) y[out_base + rank * inner] = int32_t(i);
  }
};

// One block per row: each element's rank under the total order, then emit(...).
// out_len: the output's length along the axis (n for the mask, k for the indices).
template <typename Emit>
__global__ void topk_rank_kernel(const float* x, AxisLines rows, int64_t out_len, Emit emit) {
  __shared__ uint32_t tile[kTile];
  const int64_t n = rows.n, inner = rows.inner;
  const bool one_tile = n <= kTile;
  for (int64_t r = blockIdx.x; r < rows.count(); r += gridDim.x) {
    const int64_t o = r / inner, in = r % inner;
    const int64_t base = o * n * inner + in, out_base = o * out_len * inner + in;
    for (int64_t c0 = 0; c0 < n; c0 += blockDim.x) {
      const int64_t i = c0 + threadIdx.x;
      const bool valid = i < n;
      const float v = valid ? x[base + i * inner] : 0.0f;
      const uint32_t ki = order_key(v);
      int64_t rank = 0;
      for (int64_t t0 = 0; t0 < n; t0 += kTile) {
        const int64_t tn = n - t0 < kTile ? n - t0 : kTile;
        if (!one_tile || c0 == 0) {  // a row within one tile is loaded once
          __syncthreads();           // every thread is done with the previous tile
          for (int64_t j = threadIdx.x; j < tn; j += blockDim.x)
            tile[j] = order_key(x[base + (t0 + j) * inner]);
          __syncthreads();
        }
        if (valid)
          for (int64_t j = 0; j < tn; ++j) {
            const uint32_t kj = tile[j];
            rank += (kj > ki || (kj == ki && t0 + j < i)) ? 1 : 0;
          }
      }
      if (valid) emit(base, inner, out_base, i, rank, v);
    }
  }
}

template <typename Emit>
Status launch_topk(const KernelArgs& args, const AxisLines& rows, int64_t out_len, Emit emit,
                   const char* name) {
  const int64_t t = (rows.n + 31) / 32 * 32;
  const int threads = int(t < kMaxThreads ? t : kMaxThreads);
  const unsigned blocks = unsigned(rows.count() < kMaxBlocks ? rows.count() : kMaxBlocks);
  topk_rank_kernel<<<blocks, threads, 0, args.ctx->stream>>>(args.inputs[0].ptr<const float>(), rows, out_len,
                                                             emit);
  LR_CUDA_LAUNCHED(name);
  return {};
}

Status run_topk_mask(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "topk_mask"));
  const auto& a = args.attr<TopkMaskAttrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  if (xd.numel() == 0) return {};
  const AxisLines rows = axis_lines(xd, xd.normalize_axis(a.axis));
  // k needs no clamping: every rank is below n.
  return launch_topk(args, rows, rows.n, MaskEmit{args.outputs[0].data, a.output_scores, a.k},
                     "topk_rank_kernel(mask)");
}

Status run_topk_indices(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "topk_indices"));
  const auto& a = args.attr<TopkIndicesAttrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  if (xd.numel() == 0 || args.outputs[0].desc.numel() == 0) return {};
  const AxisLines rows = axis_lines(xd, xd.normalize_axis(a.axis));
  return launch_topk(args, rows, a.k, IndexEmit{args.outputs[0].ptr<int32_t>(), a.k},
                     "topk_rank_kernel(indices)");
}

}  // namespace

// x is f32 and the outputs u8 / f32 / i32 as shape inference fixes them: no supports step.
Kernel make_kernel_topk_mask() { return Kernel{run_topk_mask, nullptr, nullptr}; }
Kernel make_kernel_topk_indices() { return Kernel{run_topk_indices, nullptr, nullptr}; }

}  // namespace longrun::cuda
