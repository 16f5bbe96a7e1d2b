// Differential cases of the sequence ops: the spectral transforms (lengths around FFT radix
// and vector widths, primes, axis -1 and the model's axis -2, truncation and padding,
// every method), selection (ties, NaN, ±inf, ±0, k at the edges) and the scans/pooling
// (NaN propagation, signed-zero ties, ragged segments, every resampling ratio kind).
#include <algorithm>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "conformance/diff_case.h"

namespace longrun::conformance::diff {
namespace {

// Lengths for the transforms: the sweep, primes, and the power-of-two / FFT-unfriendly
// lengths of real sequences. Rows shrink as N grows: the O(N^2) oracle pays for them.
std::vector<int64_t> transform_lengths() {
  std::vector<int64_t> v(std::begin(kSizes), std::end(kSizes));
  v.insert(v.end(), std::begin(kPrimes), std::end(kPrimes));
  for (int64_t n : {255, 256, 257, 512, 1000, 1024}) v.push_back(n);
  return v;
}
// The values of `v` without repeats, in first-seen order (k or segment lists that collapse
// for small n).
std::vector<int64_t> distinct(std::initializer_list<int64_t> v) {
  std::vector<int64_t> out;
  for (int64_t x : v)
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  return out;
}

int64_t rows_for(int64_t n) { return n <= 64 ? 3 : n <= 256 ? 2 : 1; }

// Ties everywhere (quantised values), plus NaN, ±inf and signed zeros.
constexpr Fill kTies{-2, 2, 0.1, 0.05, 0, 0.03, 0.03, 0.03, 0.25};
// The same without NaN: a NaN sticks in a running max, so long rows need NaN-free twins.
constexpr Fill kTiesNoNan{-2, 2, 0.1, 0.05, 0, 0, 0.03, 0.03, 0.25};

}  // namespace

void generate_dct(CaseList& L) {
  Rng& r = L.rng();
  for (int64_t n : transform_lengths()) {
    const int64_t keep = n % 3 == 0 ? 0 : n % 3 == 1 ? n : (n + 1) / 2;
    L.add("n" + std::to_string(n) + "_keep" + std::to_string(keep), DctAttrs{.axis = -1, .keep = keep},
          {random(r, DType::f32, {rows_for(n), n})});
  }
  // Along the sequence axis of [B, N, D] (the model's layout), keeping a prefix.
  for (auto [n, d, keep] : {std::tuple<int64_t, int64_t, int64_t>{16, 7, 0},
                            {33, 16, 9},
                            {64, 1, 32},
                            {100, 17, 1},
                            {128, 64, 32},
                            {512, 8, 128}})
    L.add("seq_n" + std::to_string(n) + "_d" + std::to_string(d) + "_keep" + std::to_string(keep),
          DctAttrs{.axis = -2, .keep = keep}, {random(r, DType::f32, {2, n, d})});
  // Line counts around the 8 x 8 transpose tiles and the 64-line work units, and an input
  // over the 1 MiB block (a few kept coefficients keep the O(N keep) oracle cheap).
  for (int64_t lines : {1, 7, 8, 9, 16, 17, 65, 129, 300})
    L.add("lines" + std::to_string(lines), DctAttrs{.axis = -2, .keep = 16},
          {random(r, DType::f32, {1, 64, lines})});
  L.add("block", DctAttrs{.axis = -2, .keep = 8}, {random(r, DType::f32, {1, 1024, 300})});
  // n = 4096: a 64-column block through the column route's separate gather pass, a 16-column
  // one without it.
  L.add("gather", DctAttrs{.axis = -2, .keep = 8}, {random(r, DType::f32, {1, 4096, 80})});
  L.add("axis0", DctAttrs{.axis = 0, .keep = 5}, {random(r, DType::f32, {17, 3, 2})});
  L.add("finite", DctAttrs{}, {random(r, DType::f32, {2, 64}, kFinite)});
}

void generate_idct(CaseList& L) {
  Rng& r = L.rng();
  for (int64_t n : transform_lengths()) {
    // n = 0 (input length), a truncation, a zero-padding.
    const int64_t m = n % 3 == 0 ? 0 : n % 3 == 1 ? (n + 1) / 2 : n + 7;
    L.add("len" + std::to_string(n) + "_n" + std::to_string(m), IdctAttrs{.axis = -1, .n = m},
          {random(r, DType::f32, {rows_for(n), n})});
  }
  for (auto [len, d, m] : {std::tuple<int64_t, int64_t, int64_t>{16, 7, 0},
                           {9, 16, 33},
                           {64, 1, 128},
                           {129, 17, 100},
                           {128, 64, 512}})
    L.add("seq_len" + std::to_string(len) + "_d" + std::to_string(d) + "_n" + std::to_string(m),
          IdctAttrs{.axis = -2, .n = m}, {random(r, DType::f32, {2, len, d})});
  L.add("axis0", IdctAttrs{.axis = 0, .n = 20}, {random(r, DType::f32, {17, 3, 2})});
  for (int64_t lines : {1, 8, 9, 17, 129})
    L.add("lines" + std::to_string(lines), IdctAttrs{.axis = -2, .n = 64},
          {random(r, DType::f32, {1, 16, lines})});
  L.add("block", IdctAttrs{.axis = -2, .n = 1024}, {random(r, DType::f32, {1, 8, 300})});
  L.add("scatter", IdctAttrs{.axis = -2, .n = 4096}, {random(r, DType::f32, {1, 8, 80})});  // as dct "gather"
}

void generate_spectral_filter(CaseList& L) {
  Rng& r = L.rng();
  const SpectralMethod methods[] = {SpectralMethod::automatic, SpectralMethod::fft, SpectralMethod::matrix};
  int i = 0;
  for (int64_t n : {1, 2, 7, 8, 9, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 256, 257, 1000}) {
    for (int64_t keep : distinct({1, (n + 3) / 4, n, n + 5})) {
      const SpectralMethod m = methods[size_t(i++) % 3];
      L.add("n" + std::to_string(n) + "_keep" + std::to_string(keep) + "_m" + std::to_string(int(m)),
            SpectralFilterAttrs{.axis = -2, .keep = keep, .method = m},
            {random(r, DType::f32, {1, n, n <= 128 ? 5 : 2})});
    }
  }
  L.add("axis_last", SpectralFilterAttrs{.axis = -1, .keep = 20}, {random(r, DType::f32, {3, 64})});
  for (SpectralMethod m : methods) {
    L.add("lines9_m" + std::to_string(int(m)), SpectralFilterAttrs{.axis = -2, .keep = 16, .method = m},
          {random(r, DType::f32, {2, 64, 9})});
    L.add("block_m" + std::to_string(int(m)), SpectralFilterAttrs{.axis = -2, .keep = 4, .method = m},
          {random(r, DType::f32, {1, 1024, 300})});
  }
  L.add("axis0", SpectralFilterAttrs{.axis = 0, .keep = 4, .method = SpectralMethod::fft},
        {random(r, DType::f32, {17, 3, 2})});
  // Model-shaped: the Fourier Transformer's sequence filter over 512 tokens x 64 features.
  for (SpectralMethod m : methods)
    L.add("model_m" + std::to_string(int(m)), SpectralFilterAttrs{.axis = -2, .keep = 128, .method = m},
          {random(r, DType::f32, {1, 512, 64})});
}

void generate_topk_mask(CaseList& L) {
  Rng& r = L.rng();
  int i = 0;
  for (int64_t n : kSizes) {
    for (int64_t k : distinct({1, (n + 1) / 2, n, n + 3})) {
      const bool scores = i++ % 2 == 1;
      L.add("n" + std::to_string(n) + "_k" + std::to_string(k) + (scores ? "_scores" : ""),
            TopkMaskAttrs{.k = k, .axis = -1, .output_scores = scores},
            {random(r, DType::f32, {3, n}, kTies)});
    }
  }
  L.add("axis0", TopkMaskAttrs{.k = 4, .axis = 0}, {random(r, DType::f32, {17, 5}, kTies)});
  L.add("axis1", TopkMaskAttrs{.k = 2, .axis = 1, .output_scores = true},
        {random(r, DType::f32, {2, 9, 3}, kTies)});
  L.add("model", TopkMaskAttrs{.k = 32, .axis = -1, .output_scores = true},
        {random(r, DType::f32, {4, 64, 257}, kFinite)});
}

void generate_topk_indices(CaseList& L) {
  Rng& r = L.rng();
  for (int64_t n : kSizes)
    for (int64_t k : distinct({1, (n + 2) / 3, n})) {
      L.add("n" + std::to_string(n) + "_k" + std::to_string(k), TopkIndicesAttrs{.k = k, .axis = -1},
            {random(r, DType::f32, {3, n}, kTies)});
    }
  L.add("axis0", TopkIndicesAttrs{.k = 3, .axis = 0}, {random(r, DType::f32, {33, 4}, kTies)});
  L.add("model", TopkIndicesAttrs{.k = 16, .axis = -1}, {random(r, DType::f32, {2, 128, 257}, kFinite)});
}

// Shapes around the cpu kernel's row block (48 / 56 rows) and key tile (512 columns), k near
// the compaction sizes, masks, causal offsets and row_k, on adversarial values. The reference
// defines the scores' arithmetic, so every backend must match it exactly.
void generate_matmul_topk(CaseList& L) {
  Rng& r = L.rng();
  auto add = [&](const std::string& name, int64_t b, int64_t m, int64_t nk, int64_t d, MatmulTopkAttrs a,
                 const Fill& fill, bool batch_mask = true, bool row_k_rows = true) {
    std::vector<HostTensor> in{random(r, DType::f32, {b, m, d}, fill),
                               random(r, DType::f32, {b, nk, d}, fill)};
    if (a.has_key_mask) in.push_back(random_int(r, DType::u8, {batch_mask ? b : 1, nk}, 0, 1));
    if (a.has_row_k) in.push_back(random_int(r, DType::i32, {b, row_k_rows ? m : 1}, -1, a.k + 1));
    L.add(name, a, std::move(in));
  };
  for (int64_t nk : {1, 7, 64, 511, 512, 513, 1100})
    for (int64_t k : distinct({1, (nk + 2) / 3, nk})) {
      add("n" + std::to_string(nk) + "_k" + std::to_string(k), 1, 5, nk, 8, {.k = k, .alpha = 0.125f},
          kFinite);
      add("causal_n" + std::to_string(nk) + "_k" + std::to_string(k), 2, std::min<int64_t>(nk, 61), nk, 3,
          {.k = k, .causal = true, .has_row_k = true}, kFinite);
    }
  for (int64_t m : {1, 47, 48, 49, 56, 57, 97, 113})
    add("rows" + std::to_string(m), 1, m, 300, 16, {.k = 20, .alpha = 0.25f}, kFinite);
  add("mask_per_batch", 3, 50, 700, 5, {.k = 40, .has_key_mask = true}, kFinite);
  add("mask_shared_causal", 2, 100, 900, 5, {.k = 64, .causal = true, .has_key_mask = true}, kFinite, false);
  add("mask_rowk_broadcast", 2, 30, 600, 4, {.k = 70, .has_key_mask = true, .has_row_k = true}, kFinite, true,
      false);
  add("long_k", 1, 9, 2100, 6, {.k = 1500}, kFinite);
  add("d_long", 1, 10, 300, 600, {.k = 17, .alpha = 0.0625f}, kFinite);  // two GEMM K blocks
  add("ties", 2, 20, 1000, 2, {.k = 200}, Fill{-1.0, 1.0, 0.1, 0.4, 0, 0, 0, 0, 0.5});
  add("special", 1, 20, 800, 4, {.k = 100, .alpha = -1.0f},
      kSpecial);  // nothing masked: -inf scores rank last
}

void generate_cummax(CaseList& L) {
  Rng& r = L.rng();
  int i = 0;
  for (int64_t n : kSizes) {
    const bool reverse = i % 2 == 1, exclusive = i % 4 >= 2;
    ++i;
    L.add("n" + std::to_string(n) + (reverse ? "_rev" : "") + (exclusive ? "_excl" : ""),
          CummaxAttrs{.axis = -1, .reverse = reverse, .exclusive = exclusive},
          {random(r, DType::f32, {3, n}, i % 3 == 0 ? kTies : kTiesNoNan)});
  }
  for (int rev = 0; rev < 2; ++rev)
    for (int excl = 0; excl < 2; ++excl)
      L.add("axis0_" + std::to_string(rev) + std::to_string(excl),
            CummaxAttrs{.axis = 0, .reverse = rev == 1, .exclusive = excl == 1},
            {random(r, DType::f32, {33, 17}, kTies)});
  L.add("model", CummaxAttrs{.axis = -2}, {random(r, DType::f32, {1, 512, 64}, kFinite)});
}

// cumsum: every path of the cpu kernel (element scans of innermost-axis lines; column scans
// with whole and masked vector blocks, across the 256-column work units), each direction
// and mode, NaN/±inf/signed zeros, and the models' shapes (0/1 counts along N; the
// Combiner's summaries along a middle axis).
void generate_cumsum(CaseList& L) {
  Rng& r = L.rng();
  int i = 0;
  for (int64_t n : kSizes) {
    const bool reverse = i % 2 == 1, exclusive = i % 4 >= 2;
    ++i;
    L.add("n" + std::to_string(n) + (reverse ? "_rev" : "") + (exclusive ? "_excl" : ""),
          CumsumAttrs{.axis = -1, .reverse = reverse, .exclusive = exclusive},
          {random(r, DType::f32, {3, n}, i % 3 == 0 ? kSpecial : kFinite)});
  }
  for (int64_t w : {1, 7, 8, 17, 64, 65, 129, 256, 257, 300})
    for (int rev = 0; rev < 2; ++rev)
      for (int excl = 0; excl < 2; ++excl)
        L.add("axis0_w" + std::to_string(w) + "_" + std::to_string(rev) + std::to_string(excl),
              CumsumAttrs{.axis = 0, .reverse = rev == 1, .exclusive = excl == 1},
              {random(r, DType::f32, {33, w}, w % 2 ? kSpecial : kFinite)});
  constexpr Fill kCounts{0, 2, 0, 0, 0, 0, 0, 0, 1};  // integers 0..2, like masks: exact sums
  L.add("positions", CumsumAttrs{.axis = 1}, {random(r, DType::f32, {2, 2048}, kCounts)});
  L.add("rank4_axis1", CumsumAttrs{.axis = 1, .reverse = true}, {random(r, DType::f32, {2, 9, 3, 5})});
  L.add("model", CumsumAttrs{.axis = -2, .reverse = true, .exclusive = true},
        {random(r, DType::f32, {2, 512, 64}, kFinite)});
}

void generate_segment_max(CaseList& L) {
  Rng& r = L.rng();
  for (int64_t n : {1, 7, 8, 9, 16, 17, 33, 64, 100, 129})
    for (int64_t seg : distinct({1, 2, 3, 8, 16, n, n + 1})) {
      L.add("n" + std::to_string(n) + "_seg" + std::to_string(seg),
            SegmentMaxAttrs{.axis = -2, .segment = seg},
            {random(r, DType::f32, {n, 5}, seg % 2 ? kTies : kTiesNoNan)});
    }
  L.add("last_axis", SegmentMaxAttrs{.axis = -1, .segment = 4}, {random(r, DType::f32, {3, 31}, kTies)});
  L.add("model", SegmentMaxAttrs{.axis = -2, .segment = 4}, {random(r, DType::f32, {2, 512, 64}, kFinite)});
}

void generate_upsample_nearest(CaseList& L) {
  Rng& r = L.rng();
  // Equal, exact 2x, other integer ratios, non-integer ratios, downsampling, from length 1.
  for (auto [in, out] : {std::pair<int64_t, int64_t>{7, 7},
                         {8, 16},
                         {17, 34},
                         {5, 15},
                         {16, 64},
                         {7, 20},
                         {100, 257},
                         {33, 16},
                         {129, 128},
                         {1, 9},
                         {2, 82},
                         {64, 1000},
                         {3, 1}})
    L.add("in" + std::to_string(in) + "_out" + std::to_string(out),
          UpsampleNearestAttrs{.axis = -2, .size = out}, {random(r, DType::f32, {2, in, 3}, kSpecial)});
  L.add("last_axis", UpsampleNearestAttrs{.axis = -1, .size = 31}, {random(r, DType::f32, {4, 9}, kSpecial)});
  L.add("model", UpsampleNearestAttrs{.axis = -2, .size = 512}, {random(r, DType::f32, {1, 128, 64})});
}

}  // namespace longrun::conformance::diff
