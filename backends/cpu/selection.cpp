// topk_mask / topk_indices by per-row radix selection (see selection.h).
#include "backends/cpu/selection.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "backends/cpu/topk_order.h"

namespace longrun::cpu {
namespace {

// The lines of a contiguous tensor along `axis`: viewed as [outer, n, inner], line l starts
// at (l / inner) * n * inner + l % inner and steps by inner.
struct TopkPlan {
  int64_t outer = 0, n = 0, inner = 1, lines = 0, k = 0, chunks = 1;
};

TopkPlan plan_topk(const TensorDesc& x, int axis_attr, int64_t k_attr, bool clamp_k, ThreadPool* pool) {
  TopkPlan p;
  const int axis = x.normalize_axis(axis_attr);
  p.n = x.dim(axis);
  p.outer = 1;
  for (int i = 0; i < axis; ++i) p.outer *= x.dim(i);
  for (int i = axis + 1; i < x.rank(); ++i) p.inner *= x.dim(i);
  p.lines = p.outer * p.inner;
  p.k = clamp_k ? std::min(k_attr, p.n) : k_attr;
  const int threads = pool != nullptr ? pool->num_threads() : 1;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(p.n, 1));
  p.chunks = threads <= 1 || p.lines == 0 ? 1 : thread_pool_chunk_count(p.lines, grain, threads);
  return p;
}

// Scratch words (u64) for one chunk: keys and candidates (n u32 each), the histogram
// (2048 u32) and the selected pairs (up to n u64, and as many again for the sampled route's
// radix sort).
size_t scratch_words(const TopkPlan& p) { return size_t(p.n + 1024 + std::max(p.k, 2 * p.n)); }

// Rows at least this long take the sampled route for topk_indices (below it the radix
// select's fixed costs are small anyway).
constexpr int64_t kSampleFrom = 512;
constexpr int64_t kSamples = 256;

// Sorts v[0, n) descending by an LSD radix sort on 8-bit digits, using tmp[0, n): the
// index half of a composite needs only its low bits (n < 2^24), the key half all four bytes.
void radix_sort_descending(uint64_t* v, int64_t n, uint64_t* tmp) {
  uint64_t all_or = 0, all_and = ~uint64_t(0);
  for (int64_t i = 0; i < n; ++i) all_or |= v[i], all_and &= v[i];
  uint64_t* src = v;
  uint64_t* dst = tmp;
  for (int shift = 0; shift < 64; shift += 8) {
    if (((all_or ^ all_and) >> shift & 0xff) == 0) continue;  // every value has this byte alike
    uint32_t count[256] = {};
    for (int64_t i = 0; i < n; ++i) ++count[255 - (src[i] >> shift & 0xff)];
    uint32_t at = 0;
    for (uint32_t& c : count) {
      const uint32_t here = c;
      c = at;
      at += here;
    }
    for (int64_t i = 0; i < n; ++i) dst[count[255 - (src[i] >> shift & 0xff)]++] = src[i];
    std::swap(src, dst);
  }
  if (src != v) std::memcpy(v, src, size_t(n) * sizeof(uint64_t));
}

// The sampled route for one row of topk_indices: a threshold key t from kSamples evenly
// spaced keys (the sample's rank ~1.25 k s / n + 8 largest, so about 1.25 k + a few of the
// row are >= t), then one pass keeping the (key, index) pairs with key >= t, then an exact
// selection of the k largest pairs among those and a sort of the k. Exact for any data:
// when fewer than k keys reach t (an unlucky sample) it returns false and the caller takes
// the radix route.
bool sampled_topk(const float* row, int64_t stride, int64_t n, int64_t k, uint64_t* pairs, uint32_t* sample) {
  const int64_t step = n / kSamples;
  for (int64_t s = 0; s < kSamples; ++s) sample[s] = order_key(row[s * step * stride]);
  const int64_t rank = std::min<int64_t>(kSamples - 1, (k * kSamples * 5) / (n * 4) + 8);
  std::nth_element(sample, sample + rank, sample + kSamples, std::greater<uint32_t>());
  const uint32_t t = sample[rank];
  // key >= t as a float compare: !(v < tf) also holds for NaN (the largest keys); -0 and +0
  // compare equal as their keys do. A NaN threshold (t = the NaN key) keeps everything.
  const float tf = t == 0xffffffffu ? std::numeric_limits<float>::quiet_NaN() : key_value(t);
  int64_t c = 0;
  for (int64_t j0 = 0; j0 < n; j0 += 64) {
    const uint64_t bits0 = reaching(row + j0 * stride, stride, std::min<int64_t>(64, n - j0), tf);
    for (uint64_t bits = bits0; bits != 0; bits &= bits - 1) {
      const int64_t j = j0 + __builtin_ctzll(bits);
      pairs[c++] = composite(order_key(row[j * stride]), j);
    }
  }
  if (c < k) return false;
  radix_sort_descending(pairs, c, pairs + c);
  return true;
}

struct TopkState {
  TopkPlan plan;
  std::vector<std::vector<uint64_t>> scratch;  // one per chunk; chunks never share one
};

// Radix select over 11 + 11 + 10 bits: returns the k-th largest key T of keys[0, n) and in
// *need how many keys equal to T belong to the top k (the others are all > T).
uint32_t select_kth(const uint32_t* keys, int64_t n, int64_t k, uint32_t* cand, uint32_t* hist,
                    int64_t* need) {
  constexpr int kShift[3] = {21, 10, 0}, kBits[3] = {11, 11, 10};
  const uint32_t* src = keys;
  int64_t count = n, want = k;
  uint32_t prefix = 0;
  for (int pass = 0; pass < 3; ++pass) {
    const uint32_t buckets = 1u << kBits[pass], mask = buckets - 1;
    const int shift = kShift[pass];
    std::fill(hist, hist + buckets, 0u);
    for (int64_t i = 0; i < count; ++i) ++hist[(src[i] >> shift) & mask];
    uint32_t b = mask;
    int64_t above = 0;
    while (above + int64_t(hist[b]) < want) above += hist[b--];
    want -= above;
    prefix |= b << shift;
    if (pass == 2) break;
    int64_t c = 0;  // keep the keys of bucket b (in place after the first pass)
    for (int64_t i = 0; i < count; ++i)
      if (((src[i] >> shift) & mask) == b) cand[c++] = src[i];
    src = cand;
    count = c;
  }
  *need = want;
  return prefix;
}

template <bool Indices>
Status run_topk(const KernelArgs& args) {
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  int axis = 0;
  int64_t k = 0;
  bool scores = false;
  if constexpr (Indices) {
    axis = args.attr<TopkIndicesAttrs>().axis, k = args.attr<TopkIndicesAttrs>().k;
  } else {
    const auto& a = args.attr<TopkMaskAttrs>();
    axis = a.axis, k = a.k, scores = a.output_scores;
  }
  if (x.desc.dtype() != DType::f32 || !x.desc.is_contiguous() || !y.desc.is_contiguous())
    return Indices ? reference_topk_indices(args) : reference_topk_mask(args);
  const TopkPlan p = plan_topk(x.desc, axis, k, !Indices, args.pool);
  if (p.lines == 0 || p.n == 0) return {};

  // Per-chunk scratch: prepared (and sized for this plan) or made here.
  auto* state = static_cast<TopkState*>(const_cast<void*>(args.prepared));
  std::vector<std::vector<uint64_t>> local;
  std::vector<std::vector<uint64_t>>* scratch = &local;
  if (state != nullptr && state->plan.chunks == p.chunks && state->plan.n == p.n && state->plan.k == p.k) {
    scratch = &state->scratch;
  } else {
    local.assign(size_t(p.chunks), std::vector<uint64_t>(scratch_words(p)));
  }

  const float* px = x.ptr<const float>();
  auto run_chunk = [&](int64_t chunk) {
    int64_t l0 = 0, l1 = p.lines;
    if (p.chunks > 1) thread_pool_chunk_range(p.lines, p.chunks, chunk, &l0, &l1);
    uint64_t* words = (*scratch)[size_t(chunk)].data();
    auto* keys = reinterpret_cast<uint32_t*>(words);
    uint32_t* cand = keys + p.n;
    uint32_t* hist = cand + p.n;
    uint64_t* sel = words + p.n + 1024;
    for (int64_t l = l0; l < l1; ++l) {
      const int64_t o = l / p.inner, i = l % p.inner;
      const float* row = px + o * p.n * p.inner + i;
      if constexpr (Indices) {
        // The sample lives in the candidate buffer, unused on this route.
        if (p.n >= kSampleFrom && p.k < p.n && sampled_topk(row, p.inner, p.n, p.k, sel, cand)) {
          int32_t* out = y.ptr<int32_t>() + o * p.k * p.inner + i;
          for (int64_t r = 0; r < p.k; ++r) out[r * p.inner] = composite_index(sel[r]);
          continue;
        }
      }
      for (int64_t j = 0; j < p.n; ++j) keys[j] = order_key(row[j * p.inner]);
      int64_t need = 0;
      const uint32_t t = p.k < p.n ? select_kth(keys, p.n, p.k, cand, hist, &need) : 0u;
      if (p.k >= p.n) need = p.n;  // everything is selected: T = 0 takes every key
      if constexpr (Indices) {
        int64_t c = 0;
        for (int64_t j = 0; j < p.n; ++j)
          if (keys[j] > t || (keys[j] == t && need-- > 0)) sel[c++] = composite(keys[j], j);
        // Descending composite key: larger value first, then lower index.
        std::sort(sel, sel + c, std::greater<uint64_t>());
        int32_t* out = y.ptr<int32_t>() + o * p.k * p.inner + i;
        for (int64_t r = 0; r < c; ++r) out[r * p.inner] = composite_index(sel[r]);
      } else {
        const int64_t base = o * p.n * p.inner + i;
        for (int64_t j = 0; j < p.n; ++j) {
          const bool kept = keys[j] > t || (keys[j] == t && need-- > 0);
          if (scores)
            y.ptr<float>()[base + j * p.inner] =
                kept ? row[j * p.inner] : -std::numeric_limits<float>::infinity();
          else
            y.ptr<uint8_t>()[base + j * p.inner] = kept ? 1 : 0;
        }
      }
    }
  };
  if (p.chunks == 1) {
    run_chunk(0);
  } else {
    // One task per chunk (chunks <= 4 * threads, grain 1): the chunk index picks the scratch.
    const auto* run = &run_chunk;  // a one-pointer capture: std::function stores it inline
    args.pool->parallel_for(p.chunks, 1, [run](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) (*run)(c);
    });
  }
  return {};
}

}  // namespace

Status cpu_topk_mask_f32(const KernelArgs& args) { return run_topk<false>(args); }
Status cpu_topk_indices_f32(const KernelArgs& args) { return run_topk<true>(args); }

Result<std::shared_ptr<void>> cpu_topk_prepare(const Graph& graph, const Node& node, ThreadPool* pool) {
  const TensorDesc& x = graph.value(node.inputs[0]).desc;
  auto state = std::make_shared<TopkState>();
  if (node.kind == OpKind::topk_indices) {
    const auto& a = std::get<TopkIndicesAttrs>(node.attrs);
    state->plan = plan_topk(x, a.axis, a.k, false, pool);
  } else {
    const auto& a = std::get<TopkMaskAttrs>(node.attrs);
    state->plan = plan_topk(x, a.axis, a.k, true, pool);
  }
  LR_RETURN_IF_ERROR(host::reserve_workspace_bytes(state->plan.chunks *
                                                   int64_t(scratch_words(state->plan) * sizeof(uint64_t))));
  state->scratch.assign(size_t(state->plan.chunks), std::vector<uint64_t>(scratch_words(state->plan)));
  return std::shared_ptr<void>(state);
}

}  // namespace longrun::cpu
