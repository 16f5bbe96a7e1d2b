// The int8 GEMM (gemm_s8.h): the weight panel packing and the driver of the AVX2 kernel (argument checks,
// activation quantization over the pool, blocking, threading). No intrinsics here.
#include "cpu/gemm_s8.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <new>
#include <string>
#include <vector>

namespace longrun::cpu::s8 {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Result<PackedWeightS8> pack_weight_s8x16(const QuantizedWeight& w) {
  if (w.n < 0 || w.k < 0 || w.k > kMaxK || int64_t(w.q.size()) != w.n * w.k || int64_t(w.scale.size()) != w.n)
    return invalid_argument("int8 weight: buffers do not match the shape [" + std::to_string(w.n) + ", " +
                            std::to_string(w.k) + "]");
  PackedWeightS8 p;
  p.n = w.n;
  p.k = w.k;
  p.k_pairs = ceil_div(w.k, 2);
  p.panels = ceil_div(w.n, kPanelWidth);
  try {
    p.data.assign(size_t(p.panels * p.k_pairs * 2 * kPanelWidth), 0);
    p.scale.assign(size_t(p.panels * kPanelWidth), 0.0f);
  } catch (const std::bad_alloc&) {
    return out_of_memory("int8 weight: cannot allocate the packed panels of [" + std::to_string(w.n) + ", " +
                         std::to_string(w.k) + "]");
  }
  std::copy(w.scale.begin(), w.scale.end(), p.scale.begin());
  for (int64_t c = 0; c < w.n; ++c) {
    const int64_t panel = c / kPanelWidth, h = (c % kPanelWidth) / 8, i = c % 8;
    int16_t* dst = p.data.data() + panel * p.k_pairs * 2 * kPanelWidth + 16 * h + 2 * i;
    for (int64_t k = 0; k < w.k; ++k) dst[(k / 2) * 2 * kPanelWidth + (k % 2)] = w.q[size_t(c * w.k + k)];
  }
  return p;
}

namespace {

// The reference path: quantize_weight's result (or its error) packed.
Result<PackedWeightS8> quantize_then_pack(const void* w, DType dtype, ops::LinearWeight layout, int64_t n,
                                          int64_t k) {
  LR_ASSIGN_OR_RETURN(QuantizedWeight q, ops::s8::quantize_weight(w, dtype, layout, n, k));
  return pack_weight_s8x16(q);
}

}  // namespace

Result<int64_t> quantize_pack_weight_transient_bytes(DType dtype, ops::LinearWeight layout, int64_t n,
                                                     int64_t k, ThreadPool* pool) {
  if (n <= 0 || k <= 0 || k > kMaxK || (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16) ||
      (layout != ops::LinearWeight::nk && layout != ops::LinearWeight::kn))
    return int64_t(0);
  // k <= kMaxK, so one thread's buffers fit easily; the thread count is at most an int.
  const bool in_place = dtype == DType::f32 && layout == ops::LinearWeight::nk;
  const int64_t ldq = std::max<int64_t>(8, ceil_div(k, 8) * 8);
  const int64_t one = (in_place ? 0 : kPanelWidth * k * int64_t(sizeof(float))) +
                      kPanelWidth * ldq * int64_t(sizeof(int16_t));
  const int64_t panels = ceil_div(n, kPanelWidth);
  const int64_t threads = pool != nullptr && pool->num_threads() > 1 && panels > 1
                              ? std::min<int64_t>(pool->num_threads(), panels)
                              : 1;
  int64_t all = 0;
  if (__builtin_mul_overflow(one, threads, &all))
    return invalid_argument("int8 weight: the quantization buffers of [" + std::to_string(n) + ", " +
                            std::to_string(k) + "] overflow int64");
  return all;
}

Result<PackedWeightS8> quantize_pack_weight_avx2(const void* w, DType dtype, ops::LinearWeight layout,
                                                 int64_t n, int64_t k, ThreadPool* pool) {
  // Anything but a valid weight takes the reference path for its error.
  if (n <= 0 || k <= 0 || k > kMaxK || w == nullptr ||
      (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16) ||
      (layout != ops::LinearWeight::nk && layout != ops::LinearWeight::kn))
    return quantize_then_pack(w, dtype, layout, n, k);
  PackedWeightS8 p;
  p.n = n;
  p.k = k;
  p.k_pairs = ceil_div(k, 2);
  p.panels = ceil_div(n, kPanelWidth);
  try {
    p.data.assign(size_t(p.panels * p.k_pairs * 2 * kPanelWidth), 0);
    p.scale.assign(size_t(p.panels * kPanelWidth), 0.0f);
  } catch (const std::bad_alloc&) {
    return out_of_memory("int8 weight: cannot allocate the packed panels of [" + std::to_string(n) + ", " +
                         std::to_string(k) + "]");
  }
  // Each chunk of panels: its channels' f32 rows (read in place from an f32 [n, k] weight,
  // else widened / gathered into `rows`), quantized into `q`, interleaved into its panels.
  const bool in_place = dtype == DType::f32 && layout == ops::LinearWeight::nk;
  const int64_t ldq = std::max<int64_t>(8, ceil_div(k, 8) * 8);
  std::atomic<bool> non_finite{false}, no_memory{false};
  auto pack = [&](int64_t begin, int64_t end) {
    std::vector<float> rows;
    std::vector<int16_t> q;
    try {
      if (!in_place) rows.resize(size_t(kPanelWidth * k));
      q.resize(size_t(kPanelWidth * ldq));
    } catch (const std::bad_alloc&) {
      no_memory = true;
      return;
    }
    for (int64_t panel = begin; panel < end && !non_finite; ++panel) {
      const int64_t c0 = panel * kPanelWidth;
      const int count = int(std::min<int64_t>(kPanelWidth, n - c0));
      const float* row[kPanelWidth];
      for (int i = 0; i < count; ++i) {
        row[i] = in_place ? static_cast<const float*>(w) + (c0 + i) * k : rows.data() + i * k;
        if (in_place) continue;
        float* dst = rows.data() + i * k;
        if (layout == ops::LinearWeight::nk)
          for (int64_t j = 0; j < k; ++j) dst[j] = float_element(w, dtype, (c0 + i) * k + j);
      }
      if (!in_place && layout == ops::LinearWeight::kn)  // rows of W[k, n]: 16 adjacent columns each
        for (int64_t j = 0; j < k; ++j)
          for (int i = 0; i < count; ++i) rows[size_t(i * k + j)] = float_element(w, dtype, j * n + c0 + i);
      if (!pack_panel_s8x16_avx2(row, count, k, q.data(), ldq,
                                 p.data.data() + panel * p.k_pairs * 2 * kPanelWidth, p.scale.data() + c0))
        non_finite = true;
    }
  };
  // At least 16 Ki values a chunk: a panel of a short K alone is too little work to hand out.
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / (kPanelWidth * k));
  if (pool != nullptr && pool->num_threads() > 1 && p.panels > 1)
    pool->parallel_for(p.panels, grain, std::ref(pack));
  else
    pack(0, p.panels);
  if (no_memory)
    return out_of_memory("int8 weight: cannot allocate the quantization buffers of [" + std::to_string(n) +
                         ", " + std::to_string(k) + "]");
  if (non_finite) return quantize_then_pack(w, dtype, layout, n, k);  // names the element
  return p;
}

namespace {

// Quantized A's row stride: round_up(K, 8) int16 (quantize_rows_avx2 writes whole vectors).
int64_t qa_stride(int64_t k) { return std::max<int64_t>(8, ceil_div(k, 8) * 8); }
// Where the row scales start in the scratch: after the quantized rows, on a cache line.
int64_t scales_offset(int64_t qa_elems) { return ceil_div(qa_elems * int64_t(sizeof(int16_t)), 64) * 64; }
constexpr int64_t kMaxScratchElems = int64_t(1) << 40;

}  // namespace

Result<int64_t> gemm_s8_scratch_bytes(int64_t m, int64_t k) {
  int64_t qa_elems = 0;
  if (m < 0 || k < 0 || k > kMaxK || __builtin_mul_overflow(m, qa_stride(k), &qa_elems) ||
      qa_elems > kMaxScratchElems)
    return invalid_argument("int8 gemm: A [" + std::to_string(m) + ", " + std::to_string(k) +
                            "] has no quantized scratch size");
  return scales_offset(qa_elems) + m * int64_t(sizeof(float));
}

Status gemm_s8_avx2(const float* a, int64_t m, int64_t lda, const PackedWeightS8& w, float* y, int64_t ldy,
                    const gemm::Epilogue* epilogue, ThreadPool* pool, void* scratch, int64_t scratch_bytes) {
  const int64_t K = w.k, N = w.n;
  if (m < 0 || K < 0 || N < 0) return invalid_argument("int8 gemm: negative dimension");
  if (K > kMaxK)
    return invalid_argument("int8 gemm: K = " + std::to_string(K) + " exceeds " + std::to_string(kMaxK) +
                            ", the most whose int32 sums are exact");
  if (w.k_pairs != ceil_div(K, 2) || w.panels != ceil_div(N, kPanelWidth) ||
      int64_t(w.data.size()) != w.panels * w.k_pairs * 2 * kPanelWidth ||
      int64_t(w.scale.size()) != w.panels * kPanelWidth)
    return invalid_argument("int8 gemm: the packed weight's buffers do not match its shape [" +
                            std::to_string(N) + ", " + std::to_string(K) + "]");
  if (m > 0 && (lda < K || ldy < N))
    return invalid_argument("int8 gemm: row strides (A " + std::to_string(lda) + ", Y " +
                            std::to_string(ldy) + ") shorter than the rows (K " + std::to_string(K) + ", N " +
                            std::to_string(N) + ")");
  if (m == 0 || N == 0) return {};
  if (epilogue != nullptr && epilogue->c != nullptr && epilogue->ldc < N)
    return invalid_argument("int8 gemm: C's row stride " + std::to_string(epilogue->ldc) +
                            " is shorter than N " + std::to_string(N));

  // Quantized A and its row scales: in the caller's scratch when it fits, else owned.
  const int64_t ldq = qa_stride(K);
  LR_ASSIGN_OR_RETURN(const int64_t need, gemm_s8_scratch_bytes(m, K));
  const int64_t qa_elems = m * ldq;
  int16_t* qa = nullptr;
  float* sa = nullptr;
  std::vector<int16_t> own_qa;
  std::vector<float> own_sa;
  if (scratch != nullptr && scratch_bytes >= need &&
      reinterpret_cast<uintptr_t>(scratch) % alignof(float) == 0) {
    // New int16 and float arrays in the caller's bytes (placement new starts their lifetimes;
    // nothing runs for these trivial types).
    qa = ::new (scratch) int16_t[size_t(qa_elems)];
    sa = ::new (static_cast<char*>(scratch) + scales_offset(qa_elems)) float[size_t(m)];
  } else {
    try {
      own_qa.resize(static_cast<size_t>(qa_elems));
      own_sa.resize(static_cast<size_t>(m));
    } catch (const std::bad_alloc&) {
      return out_of_memory("int8 gemm: cannot allocate the quantized A [" + std::to_string(m) + ", " +
                           std::to_string(ldq) + "] int16");
    }
    qa = own_qa.data();
    sa = own_sa.data();
  }
  gemm::for_each_row_range(m, K, pool, [&](int64_t begin, int64_t end) {
    quantize_rows_avx2(a + begin * lda, end - begin, K, lda, qa + begin * ldq, ldq, sa + begin);
  });
  // Blocks of whole tiles x whole panels (gemm_blocks.h): an M block's quantized rows (48 x K
  // int16) stay in L2 while each panel's K x 16 int16 streams through L1.
  auto run_block = [&](const gemm::Block& b) {
    BlockArgs g;
    static_cast<gemm::Block&>(g) = b;
    g.qa = qa + b.m0 * ldq;
    g.lda = ldq;
    g.sa = sa + b.m0;
    g.w = &w;
    gemm_s8_block_avx2(g);
  };
  gemm::for_each_block(m, kTileRows, w.panels, kPanelWidth, y, ldy, epilogue, pool, run_block);
  return {};
}

}  // namespace longrun::cpu::s8
