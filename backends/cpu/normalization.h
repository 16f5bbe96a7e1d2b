// The cpu backend's softmax and layer_norm kernels (avx2 and avx512 levels). As in
// elementwise.h: the first half is all that the ISA files see (row primitives behind plain
// function pointers), the second half declares the KernelFn entry points of kernels.inc.
#pragma once

#include <cstdint>

namespace longrun::cpu {

// Element type of layer_norm's gamma / beta (kept apart from DType so that the ISA files
// include no library header).
enum class ParamType : uint8_t { f32, f16, bf16 };

// How far ahead of the row in hand the row kernels fetch their input (8 KiB: four rows of
// 512): softmax_row's `fetch` row is this far ahead, and layer_norm_rows fetches this far
// ahead during one pass (normalization_impl.h says which).
inline constexpr int64_t kRowFetchAheadFloats = 2048;

// Softmax rows up to this many logits (64 KB) stay in cache for three passes (max, exp,
// scale); longer rows take the two-pass online softmax (NormalizationIsa::softmax_row).
inline constexpr int64_t kSoftmaxCachedRow = 16384;
// Rows up to this many logits are streamed by NormalizationIsa::softmax_rows (8 KiB: two of
// them wait in a 16 KiB stack buffer); longer streamed rows go row by row (softmax_row).
inline constexpr int64_t kSoftmaxStreamedRows = 2048;

// How layer_norm_rows moves its rows (NormalizationIsa::layer_norm_rows says what each does).
struct RowFlow {
  bool stream = false;
  bool fetch_ahead = false;
};

struct NormalizationIsa {
  // One softmax row of n logits l[j] = x[j] * scale + mask[j * mask_step] (mask may be null;
  // mask_step is 0 or 1). Only j < valid take part (causal masking: the rest are -inf and get
  // 0). Rows longer than 16384 make two passes over x: an online max + sum (one exp per
  // element: the exponent is -|l - m| whether the running max m moves or not; per-lane state
  // merged in a fixed order), then y[j] = exp(l[j] - max) / sum. Shorter rows stay in cache,
  // so three cheaper passes win there: max, y = exp(l - max) with the sum, y *= 1 / sum (one
  // exp per element instead of two); on AVX-512, unmasked rows of at most 4096 logits shift
  // by their first logit instead of the max where the sum shows that this is safe, and skip
  // the max pass (normalization_impl.h, softmax_cached). A row whose logits are all -inf gives
  // zeros; a NaN or +inf logit gives a NaN row (as the reference). y may alias x (the bits do
  // not depend on it). `stream`: a whole row of at most 4096 logits (valid == n, n a whole
  // number of vectors, y on a vector boundary: the caller checks y and n) is written once with
  // non-temporal stores, then an sfence.
  // `fetch`: null, or input the caller reads next (a row ahead); a row short enough for the
  // three passes fetches the first `valid` floats there into L1 during its exp pass.
  void (*softmax_row)(const float* x, const float* mask, int mask_step, float scale, int64_t valid, int64_t n,
                      float* y, bool stream, const float* fetch);
  // `rows` contiguous rows of n logits x[j] * scale, no mask, every logit valid, n <=
  // kSoftmaxCachedRow: the same bits as softmax_row on each row, with the rows' passes
  // overlapped (normalization_impl.h, softmax_rows_t). Each row fetches the row `ahead` rows
  // on (when it is one of these rows; ahead 0: none) during its exp pass. `stream`: rows of at
  // most kSoftmaxStreamedRows logits in whole vectors (y's rows start on vector boundaries: the caller
  // checks) are written once with non-temporal stores, then an sfence.
  void (*softmax_rows)(const float* x, float scale, int64_t n, int64_t rows, float* y, int64_t ahead,
                       bool stream);
  // `rows` contiguous rows of d elements: the mean, then the variance (two passes over the
  // row), then y = (x - mean) / sqrt(var + eps) * gamma + beta. y may alias x. flow.stream:
  // the whole vectors of y are written with non-temporal stores (y and every row start on a
  // vector boundary: the caller checks), then an sfence. Every row fetches the input rows
  // ahead during one of its passes; flow.fetch_ahead: the input comes from memory beyond the
  // last-level cache (normalization_impl.h says which pass that picks).
  void (*layer_norm_rows)(const float* x, float* y, int64_t rows, int64_t d, float eps, const void* gamma,
                          ParamType gamma_type, const void* beta, ParamType beta_type, RowFlow flow);
};
extern const NormalizationIsa kNormalizationAvx2;
extern const NormalizationIsa kNormalizationAvx512;

}  // namespace longrun::cpu

#ifndef LONGRUN_CPU_ISA_FILE
#include "longrun/ops/schema.h"

namespace longrun::cpu {

Status cpu_softmax_f32_avx2(const KernelArgs& args);
Status cpu_layer_norm_f32_avx2(const KernelArgs& args);
Status cpu_softmax_f32_avx512(const KernelArgs& args);
Status cpu_layer_norm_f32_avx512(const KernelArgs& args);

}  // namespace longrun::cpu
#endif  // LONGRUN_CPU_ISA_FILE
