// Work split and scratch of the cpu sparse_attention kernels (sparse_attention_impl.h).
//
// A work item is (b, h, block of sparse_block_q() queries), run in two passes: first the
// logits and softmax weights of every query of the block (reading only K rows), then the
// weighted sums of V rows (reading only V). Each pass keeps one [Nk, hd] matrix hot in the
// core's L2 instead of both: with random keys, K plus V of one head (2 MB at N = 4096,
// hd 64) would not fit a 2 MB L2 together with the streamed indices, and every gathered row
// would then come from L3. The weights of the block wait in scratch between the passes, so
// the block is as many queries as fit kSparseWeightsBudget floats, or a whole head where one
// head's K fits in half the L2 (kSparseWholeHeadBudget). The gathers of K rows are the
// kernel's main cost; the FMAs and transposed sums are the rest.
#pragma once

#include <algorithm>
#include <cstdint>

#include "longrun/tensor_desc.h"

namespace longrun::cpu {

// Floats of softmax weights kept per block between the two passes (256 KB: 315 queries at
// N = 4096, k = 205): small enough that pass 2 reads them back from L2.
inline constexpr int64_t kSparseWeightsBudget = int64_t(1) << 16;
// The budget when one head's K rows fit in half of one core's L2 (sparse_k_fits_l2): whole
// heads, up to 4 MB of weights. Pass 1 then gathers from a K that stays in L2 for the whole
// head; with blocks, each block's pass 2 streams V through the L2 and evicts K, and the next
// block's pass 1 fetches K from L3 again. A core whose L2 cannot hold half a K keeps the
// small blocks.
inline constexpr int64_t kSparseWholeHeadBudget = int64_t(1) << 20;

// The L2 size sparse_k_fits_l2 compares with: l2_cache_bytes() (cpu_isa.h) unless a test
// sets it (sparse_attention.cpp).
int64_t& sparse_l2_bytes();

// Whether the lines of Nk key rows of hd elements of kv_bytes (4: f32, 2: bf16) take at most
// half of sparse_l2_bytes().
inline bool sparse_k_fits_l2(int64_t Nk, int64_t hd, int64_t kv_bytes = 4) {
  const int64_t row_bytes = (std::max<int64_t>(hd, 1) * kv_bytes + 63) / 64 * 64;
  return Nk <= sparse_l2_bytes() / 2 / row_bytes;
}

// Parallel chunks per thread (attention.h): one; a chunk's scratch holds one block's
// weights, and its items (blocks) run one after another.
inline constexpr int kSparseChunksPerThread = 1;

inline int64_t sparse_round16(int64_t n) { return (n + 15) / 16 * 16; }

// Queries per work item for kk index slots over Nk keys of hd elements of kv_bytes (at least
// 1, at most Nq). Each query's result is the same whatever its block.
inline int64_t sparse_block_q(int64_t Nq, int64_t Nk, int64_t kk, int64_t hd, int64_t kv_bytes = 4) {
  const int64_t budget = sparse_k_fits_l2(Nk, hd, kv_bytes) ? kSparseWholeHeadBudget : kSparseWeightsBudget;
  return std::max<int64_t>(1, std::min(Nq, budget / sparse_round16(std::max<int64_t>(kk, 1))));
}

inline int64_t sparse_items(int64_t B, int64_t H, int64_t Nq, int64_t Nk, int64_t kk, int64_t hd,
                            int64_t kv_bytes = 4) {
  const int64_t bq = sparse_block_q(Nq, Nk, kk, hd, kv_bytes);
  return B * H * ((Nq + bq - 1) / bq);
}

// Per-chunk scratch, offsets in floats: the key list of one query (kk, padded to whole
// vectors plus one vector for the repeated last key), the query row zero-padded to whole
// vectors, then per query of the block its weights (row of kk rounded up to 16), its
// softmax sum and its count of valid slots (an int32 in a float slot).
struct SparseScratchLayout {
  int64_t keys = 0, q = 0, weights = 0, wstride = 0, sums = 0, counts = 0, floats = 0;
};
inline SparseScratchLayout sparse_scratch_layout(int64_t Nq, int64_t Nk, int64_t kk, int64_t hd,
                                                 int64_t kv_bytes = 4) {
  SparseScratchLayout s;
  const int64_t bq = sparse_block_q(Nq, Nk, kk, hd, kv_bytes);
  s.keys = 0;
  s.q = sparse_round16(kk) + 16;
  s.weights = s.q + sparse_round16(hd);
  s.wstride = sparse_round16(kk);
  s.sums = s.weights + bq * s.wstride;
  s.counts = s.sums + sparse_round16(bq);
  s.floats = s.counts + sparse_round16(bq);
  return s;
}

// bf16 sessions: f32 K [B, H, Nk, hd] and V [B, H, Nk, hv] are rounded to bf16
// (f32_to_bf16, round to nearest even) into contiguous copies, K's then V's, once per run,
// and the bf16 kernel gathers from them: B·H·Nk·(hd + hv) conversions against the
// B·H·Nq·kk·(hd + hv) gathered elements, which then move half the bytes. The copies live in
// the prepared scratch after the chunk buffers; this is their size in floats (0 unless K
// and V are both f32 of rank 4). K's copy is padded to whole 32-byte lines.
inline int64_t sparse_rounded_kv_elements(int64_t k_numel) { return (k_numel + 15) / 16 * 16; }
inline int64_t sparse_rounded_kv_floats(const TensorDesc& k, const TensorDesc& v) {
  if (k.dtype() != DType::f32 || v.dtype() != DType::f32 || k.rank() != 4 || v.rank() != 4) return 0;
  return (sparse_rounded_kv_elements(k.numel()) + v.numel() + 1) / 2;
}

}  // namespace longrun::cpu
