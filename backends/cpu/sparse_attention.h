// Work split and scratch of the cpu sparse_attention kernels (sparse_attention_impl.h).
//
// A work item is (b, h, block of sparse_block_q() queries), run in two passes: first the
// logits and softmax weights of every query of the block (reading only K rows), then the
// weighted sums of V rows (reading only V). Each pass keeps one [Nk, hd] matrix hot in the
// core's L2 instead of both: with random keys, a K plus V of 2 MB per head (N = 4096,
// hd 64) would not fit a 2 MB L2 together with the streamed indices, and every gathered row
// would then come from L3. The weights of the block wait in scratch between the passes, so
// the block is as many queries as fit kSparseWeightsBudget floats, or a whole head where one
// head's K fits in half the L2 (kSparseWholeHeadBudget).
// On a 1 MB L2 (Zen 4) even one matrix does not fit, but splitting each pass into column
// bands of 512 KB (two bands of 32 floats at N = 4096) was 8 % slower, and V bands alone
// made no difference; key tiles of 256 or 512 KB (each query's keys sorted by tile, both
// passes tile by tile, whole-head or 145-query blocks) were 2-77 % slower, although with
// every key below 1024 the kernel takes 25-28 % less time: the short groups at every tile's
// end and the extra passes cost more than the L2 hits save. Per (query, key) pair at
// N = 4096 (session 15, TSC cycles at 2.6 GHz): pass 1 11.2 and pass 2 7.6 with random keys,
// 6.8 and 4.4 with every key below 256 (rows in L2), 6.6 and 4.0 below 64 (L1): the rest is
// the gathers, FMAs and transposed sums themselves. Also tried in session 15, none faster:
// software prefetch of the next group's K rows (1-6 % slower) or of V rows 16 keys ahead
// (even), non-temporal stores of the weights (even), V sums over 4 keys vector by vector
// (2-10 % slower), index rows sorted by key (1-2 %, not worth a sort), and a per-block
// inverted index (queries listed per key, each K / V row loaded once per block; prototype:
// the counting sort alone cost 9 cycles per pair). On a Zen 3 (AVX2, 512 KB L2; session 16)
// a pair costs about 44 cycles in all; blocks of 128 or 64 KB of weights were even to 4 %
// slower, prefetching the next group's K rows (first line or all four) 2-10 % slower. Session
// 17 (Zen 3): pass 2 over each V row once (8 AVX2 vectors, one accumulator set) instead of
// two halves: 0.92-0.99 at 1 thread, 0.94-1.12 at 2 (medians 0.98): within noise, not landed.
// Session 22 repeated it (five alternating runs, N = 4096, k = 205): 0.95-1.00 at 1 thread
// and 0.92-0.99 at 2 (median ~0.97). As every 1-thread run of both sessions was at or
// below 1.00, it landed (sparse_attention_impl.h, kPvVecs).
// Session 20 (Zen 3, 1 thread, N = 4096): reading only keys below 128 / 512 / 1024 (the index
// masked in the kernel, an A/B in one process) took 0.58 / 0.59-0.60 / 0.84-0.89 of the time,
// so at most ~40 % is the gathers' wait on L3. Key bands of 1024 or 512 rows (each query's
// keys counting-sorted by band, both passes band by band over sub-blocks of 160 or 320
// queries, V sums accumulated into y) took 1.25-1.34x the time: the sort's scatter is a
// store-forwarding chain through the band counters, the short groups at each band's end
// cost dot products, and pass 2 gained nothing from its L2-resident band.
// Session 24 (Zen 4): the next query's index row is fetched during pass 1
// (fetch_index_row, 0.95-0.99); transparent huge pages for K, V and the arena (2 MB pages,
// madvise) were 0.98 on 1 thread and noise on 2; four chunks per thread instead of one even.
// Session 25 (Zen 5, full-width AVX-512, 1 MB L2; N = 4096, k = 205, 1 thread; keys masked
// in the bench's indices or in one pass only, a temporary patch): 31-34 ms with random keys,
// 23-24 ms with every key below 1024 or 2048, 15 ms below 64 (L1); pass 1 alone over keys
// below 64 20-21 ms, below 2048 26-29, pass 2 alone below 64 25-29: pass 1's K gathers are
// the larger wait. Dense attention runs at 181 GFLOP/s there (186 ms), so 8x is 23.3 ms,
// about what L2-resident rows give. Software prefetch of the next group's (or the one after
// that's) K rows, all four lines or two, into L1 or L2 (T0 / T1 / T2): 1.2-1.8x the time.
#pragma once

#include <algorithm>
#include <cstdint>

namespace longrun::cpu {

// Floats of softmax weights kept per block between the two passes (256 KB: 315 queries at
// N = 4096, k = 205), so pass 2 reads them back from L2. Alternating runs in one process
// (N = 4096, Zen 4, 1 MB L2): blocks of 256-512 queries took 8-15 % less time than whole
// heads (4096 queries, 3.4 MB of weights), 128 queries 6-11 %, 1024 queries 4-12 %.
// (Before the d-major dots, runs in separate processes had favoured whole heads.)
inline constexpr int64_t kSparseWeightsBudget = int64_t(1) << 16;
// The budget when one head's K rows fit in half of one core's L2 (sparse_k_fits_l2): whole
// heads up to 4 MB of weights. Pass 1 then gathers from a K that stays in L2 for the whole
// head, where with blocks each block's pass 2 streams V through the L2 and evicts K, so every
// block's pass 1 fetches K again from L3. Sapphire Rapids (2 MB L2, shared VM; N = 4096,
// k = 205, paired ratios against dense attention, four runs each): 5.7-6.4x dense on 1 thread
// and 5.7-6.2x on 2 against 4.9-5.4x and 4.8-5.4x with 256 KB blocks; 2 MB of weights
// (two blocks per head) 5.9-6.1x. A 1 MB L2 (Zen 4, Zen 5) holds no 1 MB K with room to
// spare, so it keeps the small blocks that won there. Session 32 (Zen 5, 1 MB L2) tried making
// it fit: whole heads whose passes run in column bands of K and V (two bands of 32 floats, 512
// KB each, each band fetched once per head, all the head's queries per band). Five rounds of
// three binaries, N = 4096, k = 205, paired ratio against dense: 5.06 (4.89-5.51) on 1 thread
// and 5.13 (4.88-5.44) on 2 with these small blocks, 4.84 / 4.78 with whole heads unbanded and
// 3.97 / 3.52 banded: a band's dots over 32 floats pay the group's index loads, gathers'
// address work and transposed sums twice per key, which costs more than the L2 hits save.
inline constexpr int64_t kSparseWholeHeadBudget = int64_t(1) << 20;

// The L2 size sparse_k_fits_l2 compares with: l2_cache_bytes() (cpu_isa.h) unless a test
// sets it (sparse_attention.cpp).
int64_t& sparse_l2_bytes();

// Whether the lines of Nk key rows of hd floats take at most half of sparse_l2_bytes().
inline bool sparse_k_fits_l2(int64_t Nk, int64_t hd) {
  const int64_t row_bytes = (std::max<int64_t>(hd, 1) * int64_t(sizeof(float)) + 63) / 64 * 64;
  return Nk <= sparse_l2_bytes() / 2 / row_bytes;
}

// Parallel chunks per thread (attention.h): one; a chunk's scratch holds one block's
// weights, and its items (blocks) run one after another.
inline constexpr int kSparseChunksPerThread = 1;

inline int64_t sparse_round16(int64_t n) { return (n + 15) / 16 * 16; }

// Queries per work item for kk index slots over Nk keys of hd floats (at least 1, at most
// Nq). Each query's result is the same whatever its block.
inline int64_t sparse_block_q(int64_t Nq, int64_t Nk, int64_t kk, int64_t hd) {
  const int64_t budget = sparse_k_fits_l2(Nk, hd) ? kSparseWholeHeadBudget : kSparseWeightsBudget;
  return std::max<int64_t>(1, std::min(Nq, budget / sparse_round16(std::max<int64_t>(kk, 1))));
}

inline int64_t sparse_items(int64_t B, int64_t H, int64_t Nq, int64_t Nk, int64_t kk, int64_t hd) {
  const int64_t bq = sparse_block_q(Nq, Nk, kk, hd);
  return B * H * ((Nq + bq - 1) / bq);
}

// Per-chunk scratch, offsets in floats: the key list of one query (kk, padded to whole
// vectors plus one vector for the repeated last key), the query row zero-padded to whole
// vectors, then per query of the block its weights (row of kk rounded up to 16), its
// softmax sum and its count of valid slots (an int32 in a float slot).
struct SparseScratchLayout {
  int64_t keys = 0, q = 0, weights = 0, wstride = 0, sums = 0, counts = 0, floats = 0;
};
inline SparseScratchLayout sparse_scratch_layout(int64_t Nq, int64_t Nk, int64_t kk, int64_t hd) {
  SparseScratchLayout s;
  const int64_t bq = sparse_block_q(Nq, Nk, kk, hd);
  s.keys = 0;
  s.q = sparse_round16(kk) + 16;
  s.weights = s.q + sparse_round16(hd);
  s.wstride = sparse_round16(kk);
  s.sums = s.weights + bq * s.wstride;
  s.counts = s.sums + sparse_round16(bq);
  s.floats = s.counts + sparse_round16(bq);
  return s;
}

}  // namespace longrun::cpu
