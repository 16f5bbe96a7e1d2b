// CUDA kernels of topk_mask, topk_indices and matmul_topk (semantics: attrs.h; oracle:
// ops/reference/selection.cpp). Both are exact (tolerance 0).
//
// Both select under the ops' one total order: larger value first, every NaN above +inf,
// equal values (NaN vs NaN, -0 vs +0 included) by ascending index. order_key maps a value
// to an unsigned key with that value order (NaN the largest key, -0 the key of +0), so the
// order is (key descending, index ascending).
//
// Two paths, one block per row (blocks stride over the rows; a row is a line of AxisLines,
// strided when the axis is not the last):
// - radix (default for rows up to kRadixMaxN whose keys fit in shared memory): the row's
//   keys are loaded into shared memory once; four 8-bit radix passes (a 256-bin shared
//   histogram each, filled with warp-aggregated atomics: integer counts, so deterministic)
//   find the k-th largest key T and `need`, how many keys equal to T are in the top k. The
//   top k is then every key > T plus the first `need` keys == T by index: one pass over the
//   row in index order, tile by tile, with a block-wide prefix count of the ties. topk_mask
//   writes each element's flag / score in that pass; topk_indices compacts the k selected
//   (key, index) pairs into shared memory in index order and writes each to the output slot
//   given by the number of selected pairs that beat it (O(k^2 / threads)).
// - rank (the fallback for longer rows): each thread takes one element i at a time and
//   counts the elements that beat it, reading the row's keys from shared memory in tiles of
//   kTile, so any row length works; O(n^2 / threads) per row. The rank of i is its position
//   in the reference's sorted order: topk_mask keeps rank < k; topk_indices writes i at
//   output slot rank when rank < k.
// LONGRUN_CUDA_TOPK=rank (read once, at the first run) forces the rank path everywhere, to
// test or time it. Neither op runs in place (schema inplace_input = -1).
#include <math_constants.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {
namespace {

constexpr int kMaxThreads = 256;                  // rank path
constexpr int kTile = 4096;                       // rank path: order keys in shared memory (16 KiB)
constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // blocks stride over the rows beyond this
constexpr int kRadixThreads = 512;                // radix path: at most this many per block
// Radix path: longest row. Its keys and up to n candidates (3n words, 193 KiB at n = 16384)
// fit in sm_90's 227 KiB of opt-in shared memory per block.
constexpr int64_t kRadixMaxN = 16384;
constexpr int kRadixBins = 256;  // 8-bit digits
// Radix path shared memory (u32 words): histogram, 32 per-warp counts, the picked bucket and
// what is left to take from it, then the row's keys and (topk_indices) k candidate keys and
// k candidate indices.
constexpr int kHistAt = 0, kWarpCountsAt = kRadixBins, kPickAt = kWarpCountsAt + 32, kKeysAt = kPickAt + 2;
constexpr int64_t kDefaultSmem = 48 * 1024;  // dynamic shared memory beyond this needs the opt-in

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
  __device__ void store(int64_t at, bool kept, float v) const {
    if (scores)
      static_cast<float*>(y)[at] = kept ? v : -CUDART_INF_F;
    else
      static_cast<uint8_t*>(y)[at] = kept ? 1 : 0;
  }
  __device__ void operator()(int64_t row_base, int64_t inner, int64_t, int64_t i, int64_t rank,
                             float v) const {
    store(row_base + i * inner, rank < k, v);
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

// ---- rank path ----

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

// ---- radix path ----

// Exclusive count of the threads before this one (in thread order) whose flag is set, and
// in *total the block's count. blockDim.x a multiple of 32; warp_counts: 32 shared ints.
// Contains __syncthreads (the first one keeps the previous call's readers ahead of the
// writes): call from every thread.
__device__ int block_exclusive_count(bool flag, int* warp_counts, int* total) {
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  __syncthreads();
  if (lane == 0) warp_counts[warp] = __popc(ballot);
  __syncthreads();
  int before = 0, all = 0;
  for (unsigned w = 0; w < warps; ++w) {
    const int c = warp_counts[w];
    before += w < warp ? c : 0;
    all += c;
  }
  *total = all;
  return before + __popc(ballot & ((1u << lane) - 1u));
}

// Run by the 32 lanes of warp 0 over a filled histogram whose bins sum to at least
// `remaining` (>= 1): the bin b holding the remaining-th largest key of the counted ones,
// and how many keys of bin b are still to take (remaining minus the keys in bins above b),
// into pick[0], pick[1]. Lane l owns bins 255 - 8l down to 248 - 8l, so a lane prefix sum
// of its 8 bins runs from the top bin down; exactly one lane's range covers `remaining`.
__device__ void pick_bucket(const uint32_t* hist, int remaining, uint32_t* pick) {
  const int lane = int(threadIdx.x & 31), top = kRadixBins - 1 - 8 * lane;
  int own = 0;
  for (int j = 0; j < 8; ++j) own += int(hist[top - j]);
  int incl = own;
  for (int o = 1; o < 32; o <<= 1) {
    const int t = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += t;
  }
  int above = incl - own;
  if (above >= remaining || remaining > incl) return;
  for (int j = 0; j < 8; ++j) {
    const int h = int(hist[top - j]);
    if (remaining <= above + h) {
      pick[0] = uint32_t(top - j);
      pick[1] = uint32_t(remaining - above);
      return;
    }
    above += h;
  }
}

// The k-th largest of keys[0, n) (k in 1..n): *threshold, and in *need how many keys equal
// to it are among the k largest (k minus the keys above it). Digits from the most
// significant: each pass counts the keys that share the digits picked so far.
// Contains __syncthreads: call from every thread; keys must be written before the call.
__device__ void radix_select(const uint32_t* keys, int n, int k, uint32_t* hist, uint32_t* pick,
                             uint32_t* threshold, int* need) {
  const unsigned lane = threadIdx.x & 31;
  uint32_t prefix = 0, mask = 0;
  int remaining = k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < kRadixBins; b += blockDim.x) hist[b] = 0;
    __syncthreads();  // the histogram is clear (and the keys, on the first pass, written)
    for (int i0 = 0; i0 < n; i0 += blockDim.x) {  // the same trip count on every thread
      const int i = i0 + int(threadIdx.x);
      const uint32_t key = i < n ? keys[i] : 0u;
      const bool counted = i < n && (key & mask) == prefix;
      const unsigned digit = counted ? (key >> shift) & 0xffu : unsigned(kRadixBins);  // off-range: a no-op
      const unsigned peers = __match_any_sync(0xffffffffu, digit);
      if (counted && lane == unsigned(__ffs(peers) - 1)) atomicAdd(&hist[digit], uint32_t(__popc(peers)));
    }
    __syncthreads();  // the histogram is complete
    if (threadIdx.x < 32) pick_bucket(hist, remaining, pick);
    __syncthreads();  // the pick is written (and the histogram read: the next pass may clear it)
    prefix |= pick[0] << shift;
    mask |= 0xffu << shift;
    remaining = int(pick[1]);
  }
  *threshold = prefix;
  *need = remaining;
}

// Shared memory of the radix path in bytes: header, keys, and for topk_indices the k
// candidate keys and indices.
int64_t radix_smem_bytes(int64_t n, int64_t candidates) { return (kKeysAt + n + 2 * candidates) * 4; }

// One block per row. k: the number to select (1..n; the mask's k clamped to n). kIndices:
// topk_indices (emit(..., i, rank, ...) for the k selected) rather than topk_mask
// (emit.store(at, kept, v) for every element).
template <bool kIndices, typename Emit>
__global__ void __launch_bounds__(kRadixThreads)
    topk_radix_kernel(const float* x, AxisLines rows, int64_t out_len, int k, Emit emit) {
  extern __shared__ uint32_t smem[];
  uint32_t* hist = smem + kHistAt;
  int* warp_counts = reinterpret_cast<int*>(smem + kWarpCountsAt);
  uint32_t* pick = smem + kPickAt;
  uint32_t* keys = smem + kKeysAt;
  const int n = int(rows.n);
  uint32_t* cand_key = keys + n;  // topk_indices only: k of each
  uint32_t* cand_idx = cand_key + k;
  const int64_t inner = rows.inner;
  for (int64_t r = blockIdx.x; r < rows.count(); r += gridDim.x) {
    const int64_t o = r / inner, in = r % inner;
    const int64_t base = o * n * inner + in, out_base = o * out_len * inner + in;
    __syncthreads();  // the previous row's readers of keys / candidates are done
    for (int i = threadIdx.x; i < n; i += blockDim.x) keys[i] = order_key(x[base + i * inner]);
    uint32_t threshold;
    int need;
    radix_select(keys, n, k, hist, pick, &threshold, &need);
    // The top k in index order: keys above the threshold, and the first `need` ties.
    int ties_before = 0, taken_before = 0;
    for (int i0 = 0; i0 < n; i0 += blockDim.x) {  // the same trip count on every thread
      const int i = i0 + int(threadIdx.x);
      const uint32_t key = i < n ? keys[i] : 0u;
      const bool tie = i < n && key == threshold;
      int tile_ties;
      const int tie_rank = ties_before + block_exclusive_count(tie, warp_counts, &tile_ties);
      ties_before += tile_ties;
      const bool selected = i < n && (key > threshold || (tie && tie_rank < need));
      if constexpr (kIndices) {
        int tile_taken;
        const int slot = taken_before + block_exclusive_count(selected, warp_counts, &tile_taken);
        taken_before += tile_taken;
        if (selected) {
          cand_key[slot] = key;
          cand_idx[slot] = uint32_t(i);
        }
      } else if (i < n) {
        const int64_t at = base + i * inner;
        emit.store(at, selected, selected && emit.scores ? x[at] : 0.0f);
      }
    }
    if constexpr (kIndices) {
      __syncthreads();  // every candidate is written
      // The candidates are in index order, so a tie is beaten by the ones before it.
      for (int p = threadIdx.x; p < k; p += blockDim.x) {
        const uint32_t kp = cand_key[p];
        int rank = 0;
        for (int q = 0; q < k; ++q) {
          const uint32_t kq = cand_key[q];
          rank += (kq > kp || (kq == kp && q < p)) ? 1 : 0;
        }
        emit(0, inner, out_base, cand_idx[p], rank, 0.0f);
      }
    }
  }
}

// Whether LONGRUN_CUDA_TOPK=rank forces the rank path (read once).
bool rank_path_forced() {
  static const bool forced = [] {
    const char* e = std::getenv("LONGRUN_CUDA_TOPK");
    return e != nullptr && std::strcmp(e, "rank") == 0;
  }();
  return forced;
}

unsigned row_blocks(const AxisLines& rows) {
  return unsigned(rows.count() < kMaxBlocks ? rows.count() : kMaxBlocks);
}

// k: how many of each row to select, 1..n (else the rank path, which needs no such bound).
// x: the rows to select from (input 0 of topk_mask / topk_indices, matmul_topk's score rows).
template <bool kIndices, typename Emit>
Status launch_topk(const KernelArgs& args, const float* x, const AxisLines& rows, int64_t out_len, int64_t k,
                   Emit emit) {
  const cudaDeviceProp& props = args.ctx->props;
  const int64_t smem = radix_smem_bytes(rows.n, kIndices ? k : 0);
  const int64_t smem_cap = props.sharedMemPerBlockOptin > props.sharedMemPerBlock
                               ? int64_t(props.sharedMemPerBlockOptin)
                               : int64_t(props.sharedMemPerBlock);
  const int64_t t = (rows.n + 31) / 32 * 32;
  if (rank_path_forced() || rows.n > kRadixMaxN || smem > smem_cap || k < 1 || k > rows.n) {
    const int threads = int(t < kMaxThreads ? t : kMaxThreads);
    topk_rank_kernel<<<row_blocks(rows), threads, 0, args.ctx->stream>>>(x, rows, out_len, emit);
    LR_CUDA_LAUNCHED(kIndices ? "topk_rank_kernel(indices)" : "topk_rank_kernel(mask)");
    return {};
  }
  auto* kernel = topk_radix_kernel<kIndices, Emit>;
  if (smem > kDefaultSmem)
    LR_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int threads = int(t < kRadixThreads ? t : kRadixThreads);
  kernel<<<row_blocks(rows), threads, size_t(smem), args.ctx->stream>>>(x, rows, out_len, int(k), emit);
  LR_CUDA_LAUNCHED(kIndices ? "topk_radix_kernel(indices)" : "topk_radix_kernel(mask)");
  return {};
}

Status run_topk_mask(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "topk_mask"));
  const auto& a = args.attr<TopkMaskAttrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  if (xd.numel() == 0) return {};
  const AxisLines rows = axis_lines(xd, xd.normalize_axis(a.axis));
  const int64_t k = a.k < rows.n ? a.k : rows.n;  // clamped to the row, as the reference
  return launch_topk<false>(args, args.inputs[0].ptr<const float>(), rows, rows.n, k,
                            MaskEmit{args.outputs[0].data, a.output_scores, k});
}

Status run_topk_indices(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "topk_indices"));
  const auto& a = args.attr<TopkIndicesAttrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  if (xd.numel() == 0 || args.outputs[0].desc.numel() == 0) return {};
  const AxisLines rows = axis_lines(xd, xd.normalize_axis(a.axis));
  return launch_topk<true>(args, args.inputs[0].ptr<const float>(), rows, a.k, a.k,
                           IndexEmit{args.outputs[0].ptr<int32_t>(), a.k});
}

// ---- matmul_topk ----
// The score rows of a chunk of query rows go to device scratch (at most kScoreScratch bytes),
// then the radix / rank top k above selects from them and a last kernel blanks the slots past
// each row's eligible count and row_k. Scores are in-order fmaf chains times alpha, as
// attrs.h defines them. Ineligible columns score -inf, so they sort after every eligible
// column whose score is above -inf.
constexpr int64_t kScoreScratch = int64_t(64) << 20;
constexpr int kScoreThreads = 256;

struct MatmulTopkShape {
  int64_t m, nk, d, off;  // off: causal reach, row i sees j <= i + off
  float alpha;
  bool causal;
  const uint8_t* mask;  // [mask_batches, nk] or null
  int64_t mask_batches;
  const int32_t* row_k;  // [row_k_batches, row_k_rows] (each 1 or full) or null
  int64_t row_k_batches, row_k_rows;
};

__device__ __forceinline__ bool eligible(const MatmulTopkShape& s, int64_t b, int64_t i, int64_t j) {
  if (s.causal && j > i + s.off) return false;
  return s.mask == nullptr || s.mask[(s.mask_batches == 1 ? 0 : b) * s.nk + j] != 0;
}

// Block x: one query row (r0 + blockIdx.x); threads stride over the columns.
__global__ void matmul_topk_scores(const float* q, const float* kmat, MatmulTopkShape s, int64_t r0,
                                   float* scores) {
  const int64_t g = r0 + blockIdx.x, b = g / s.m, i = g % s.m;
  const float* qrow = q + g * s.d;
  float* out = scores + int64_t(blockIdx.x) * s.nk;
  for (int64_t j = int64_t(blockIdx.y) * blockDim.x + threadIdx.x; j < s.nk;
       j += int64_t(gridDim.y) * blockDim.x) {
    float v = -CUDART_INF_F;
    if (eligible(s, b, i, j)) {
      const float* krow = kmat + (b * s.nk + j) * s.d;
      float acc = 0.0f;
      for (int64_t t = 0; t < s.d; ++t) acc = fmaf(qrow[t], krow[t], acc);
      v = acc * s.alpha;
    }
    out[j] = v;
  }
}

// Block x: one query row; slots from min(k, eligible, row_k) on become -1.
__global__ void matmul_topk_blank(MatmulTopkShape s, int64_t r0, int64_t k, int32_t* out) {
  __shared__ unsigned long long count;
  const int64_t g = r0 + blockIdx.x, b = g / s.m, i = g % s.m;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  unsigned long long mine = 0;
  for (int64_t j = threadIdx.x; j < s.nk; j += blockDim.x) mine += eligible(s, b, i, j) ? 1 : 0;
  atomicAdd(&count, mine);
  __syncthreads();
  int64_t slots = int64_t(count) < k ? int64_t(count) : k;
  if (s.row_k != nullptr) {
    const int64_t rk = s.row_k[(s.row_k_batches == 1 ? 0 : b) * s.row_k_rows + (s.row_k_rows == 1 ? 0 : i)];
    slots = rk < slots ? rk : slots;
  }
  int32_t* row = out + g * k;
  for (int64_t r = threadIdx.x; r < k; r += blockDim.x)
    if (r >= slots) row[r] = -1;
}

Status run_matmul_topk(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "matmul_topk"));
  const auto& a = args.attr<MatmulTopkAttrs>();
  const TensorDesc& qd = args.inputs[0].desc;
  const TensorDesc& kd = args.inputs[1].desc;
  MatmulTopkShape s{qd.dim(1), kd.dim(1), qd.dim(2), kd.dim(1) - qd.dim(1), a.alpha, a.causal, nullptr, 1,
                    nullptr,   1,         1};
  size_t next = 2;
  if (a.has_key_mask) {
    s.mask = args.inputs[next].ptr<const uint8_t>();
    s.mask_batches = args.inputs[next++].desc.dim(0);
  }
  if (a.has_row_k) {
    s.row_k = args.inputs[next].ptr<const int32_t>();
    s.row_k_batches = args.inputs[next].desc.dim(0);
    s.row_k_rows = args.inputs[next].desc.dim(1);
  }
  const int64_t total = qd.dim(0) * s.m;
  if (total == 0) return {};
  const int64_t chunk_rows = std::max<int64_t>(1, std::min<int64_t>(total, kScoreScratch / (s.nk * 4)));
  LR_ASSIGN_OR_RETURN(void* scratch, args.ctx->scratch(chunk_rows * s.nk * 4));
  auto* scores = static_cast<float*>(scratch);
  int32_t* out = args.outputs[0].ptr<int32_t>();
  const int64_t column_blocks = (s.nk + kScoreThreads - 1) / kScoreThreads;
  for (int64_t r0 = 0; r0 < total; r0 += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, total - r0);
    const dim3 grid(unsigned(rows), unsigned(column_blocks < 65535 ? column_blocks : 65535));
    matmul_topk_scores<<<grid, kScoreThreads, 0, args.ctx->stream>>>(
        args.inputs[0].ptr<const float>(), args.inputs[1].ptr<const float>(), s, r0, scores);
    LR_CUDA_LAUNCHED("matmul_topk_scores");
    const AxisLines lines{rows, s.nk, 1};
    LR_RETURN_IF_ERROR(launch_topk<true>(args, scores, lines, a.k, a.k, IndexEmit{out + r0 * a.k, a.k}));
    matmul_topk_blank<<<unsigned(rows), kScoreThreads, 0, args.ctx->stream>>>(s, r0, a.k, out);
    LR_CUDA_LAUNCHED("matmul_topk_blank");
  }
  return {};
}

}  // namespace

// x is f32 and the outputs u8 / f32 / i32 as shape inference fixes them: no supports step.
Kernel make_kernel_topk_mask() { return Kernel{run_topk_mask, nullptr, nullptr}; }
Kernel make_kernel_topk_indices() { return Kernel{run_topk_indices, nullptr, nullptr}; }
Kernel make_kernel_matmul_topk() { return Kernel{run_matmul_topk, nullptr, nullptr}; }

}  // namespace longrun::cuda
