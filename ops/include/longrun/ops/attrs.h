// Typed attribute structs, one per op in op_list.inc, and the OpKind enum / OpAttrs variant
// generated from the list. Each struct documents the op's inputs, outputs and semantics;
// ops/README.md has the same table in prose.
//
// Conventions: `axis` may be negative (counts from the end). Activations are f32; weights
// (matmul B, embedding table) may be f16/bf16 and are widened inside the kernel. Integer
// index tensors are i32 or i64 unless stated.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <variant>

#include "longrun/dtype.h"
#include "longrun/tensor_desc.h"

namespace longrun {

enum class OpKind : uint16_t {
#define LR_OP(name, Attrs) name,
#include "longrun/ops/op_list.inc"
};

inline constexpr int kNumOps = 0
#define LR_OP(name, Attrs) +1
#include "longrun/ops/op_list.inc"
    ;

std::string_view op_name(OpKind kind);

// Attribute-less ops get a distinct empty type each so that OpAttrs stays a variant of
// unique alternatives.
template <OpKind K>
struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;
};

enum class Activation : uint8_t { none, relu, gelu, gelu_tanh };

// matmul: inputs A [..., M, K] (or [..., K, M] with trans_a), B [..., K, N] (or [..., N, K]
// with trans_b), then optional bias [N] (has_bias), then optional C [..., M, N] (has_c).
// Batch dims of A, B (and C) broadcast numpy-style. A is f32; B may be f32/f16/bf16.
//   Y = act(alpha * op(A) op(B) + bias + beta * C)
struct MatmulAttrs {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 1.0f;  // used only with has_c
  bool has_bias = false;
  bool has_c = false;
  Activation activation = Activation::none;
  bool operator==(const MatmulAttrs&) const = default;
};

// add/sub/mul: two f32 inputs, numpy broadcasting, f32 output.
using AddAttrs = NoAttrs<OpKind::add>;
using SubAttrs = NoAttrs<OpKind::sub>;
using MulAttrs = NoAttrs<OpKind::mul>;
// scale: y = x * scale + shift.
struct ScaleAttrs {
  float scale = 1.0f;
  float shift = 0.0f;
  bool operator==(const ScaleAttrs&) const = default;
};
using ExpAttrs = NoAttrs<OpKind::exp>;
using TanhAttrs = NoAttrs<OpKind::tanh>;
using ReluAttrs = NoAttrs<OpKind::relu>;
// gelu: x * 0.5 * (1 + erf(x / sqrt(2))).  gelu_tanh: the tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
using GeluAttrs = NoAttrs<OpKind::gelu>;
using GeluTanhAttrs = NoAttrs<OpKind::gelu_tanh>;
// cast: any dtype to any dtype. Float->int truncates toward zero; a value (or NaN) outside
// the target integer range is an out_of_range error, and so is int->int narrowing that does
// not fit. ->f16/bf16 rounds to nearest even via f32 (as torch: int->bf16 rounds twice).
struct CastAttrs {
  DType to = DType::f32;
  bool operator==(const CastAttrs&) const = default;
};

// softmax along `axis` of x (f32). Optional second input: an additive f32 mask that
// broadcasts to x (has_mask). logits = x * scale + mask; with causal, for the last two axes
// (i = row along axis -2, j = column along the softmax axis, which must then be the last
// axis) position j is masked when j > i + (cols - rows). A row whose logits are all -inf
// gives zeros, never NaN.
struct SoftmaxAttrs {
  int axis = -1;
  float scale = 1.0f;
  bool causal = false;
  bool has_mask = false;
  bool operator==(const SoftmaxAttrs&) const = default;
};

// layer_norm over the last axis: inputs x [..., D], gamma [D], beta [D] (gamma/beta may be
// f32/f16/bf16). y = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance.
struct LayerNormAttrs {
  float eps = 1e-5f;
  bool operator==(const LayerNormAttrs&) const = default;
};

// embedding: inputs table [V, D] (f32/f16/bf16) and ids (i32/i64, any shape);
// output f32 [ids..., D]. An id outside [0, V) is an out_of_range error naming the id.
using EmbeddingAttrs = NoAttrs<OpKind::embedding>;

// dct: orthonormal DCT-II along `axis` (length N >= 1), keeping the first `keep`
// coefficients (0 = all N; keep <= N). Matches scipy.fft.dct(type=2, norm='ortho').
struct DctAttrs {
  int axis = -1;
  int64_t keep = 0;
  bool operator==(const DctAttrs&) const = default;
};
// idct: orthonormal DCT-III (the inverse of dct) along `axis`. The input is truncated or
// zero-padded to length `n` first (0 = input length). Matches
// scipy.fft.idct(x, n=n, type=2, norm='ortho').
struct IdctAttrs {
  int axis = -1;
  int64_t n = 0;
  bool operator==(const IdctAttrs&) const = default;
};
// spectral_filter: y = idct_M(dct_N(x)[0:M]) along `axis`, M = min(keep, N), keep >= 1.
// The output has length M along axis and is scaled by ~sqrt(N/M) relative to x (the
// Fourier Transformer was trained with that; do not "fix" it). `method` is a hint for
// backends (auto: cheapest by cost model).
enum class SpectralMethod : uint8_t { automatic, fft, matrix };
struct SpectralFilterAttrs {
  int axis = -2;
  int64_t keep = 1;
  SpectralMethod method = SpectralMethod::automatic;
  bool operator==(const SpectralFilterAttrs&) const = default;
};

// topk_mask along `axis` of x (f32): keep the k largest per row; ties: lower index wins
// (deterministic; torch.topk leaves tie order unspecified; -0 and +0 tie); NaN counts as
// larger than +inf (as torch.topk). Output u8 mask (1 = kept), or with
// output_scores the f32 scores with -inf at the dropped positions. k is clamped to the row
// length.
struct TopkMaskAttrs {
  int64_t k = 1;
  int axis = -1;
  bool output_scores = false;
  bool operator==(const TopkMaskAttrs&) const = default;
};
// topk_indices: i32 indices of the k largest along `axis` (the output has length k there),
// ordered by descending value, ties by ascending index, same NaN rule. k <= row length.
struct TopkIndicesAttrs {
  int64_t k = 1;
  int axis = -1;
  bool operator==(const TopkIndicesAttrs&) const = default;
};

// matmul_topk: per row of the scaled product S = alpha * A B^T, the i32 indices of its k
// largest entries among the row's eligible columns, without forming S. Inputs: A [B, M, d],
// B [B, Nk, d] (f32), then key_mask u8 [B or 1, Nk] (1 = eligible; when has_key_mask) and
// row_k i32 [B or 1, M or 1] (when has_row_k). Column j of row i is eligible when key_mask allows
// it and, with causal, j <= i + Nk - M. S[i, j] is an f32 FMA chain over d in order from 0,
// times alpha in f32 (the cpu matmul's arithmetic, so S equals that product bit for bit).
// Output [B, M, k]: the eligible columns by descending S, ties (and -0 / +0) by ascending
// index, NaN above +inf (the topk_indices order); slot r holds -1 when r >= the row's eligible
// count or r >= row_k[b, i]. Ineligible columns are never selected. 1 <= k <= Nk.
struct MatmulTopkAttrs {
  int64_t k = 1;
  float alpha = 1.0f;
  bool causal = false;
  bool has_key_mask = false;
  bool has_row_k = false;
  bool operator==(const MatmulTopkAttrs&) const = default;
};

// cummax along `axis`: y[i] = max(x[0..i]) (inclusive) or max(x[0..i-1]) (exclusive, -inf
// for the first). reverse scans from the end. NaN propagates (as torch.cummax).
struct CummaxAttrs {
  int axis = -1;
  bool reverse = false;
  bool exclusive = false;
  bool operator==(const CummaxAttrs&) const = default;
};
// cumsum along `axis`: y[i] = x[0] + ... + x[i] (inclusive) or x[0] + ... + x[i-1]
// (exclusive, +0 for the first); reverse sums from the end. The sum is accumulated in f32 in
// order along the axis (run = x[first]; run = run + x[next], one rounding per step), so the
// result is defined to the bit and every correct kernel matches: sums of integers below 2^24
// (the models' position counts) are exact. NaN and ±inf follow IEEE (inf + -inf = NaN).
struct CumsumAttrs {
  int axis = -1;
  bool reverse = false;
  bool exclusive = false;
  bool operator==(const CumsumAttrs&) const = default;
};
// segment_max: max over contiguous segments of `segment` elements along `axis`; output
// length ceil(N / segment); the last segment may be shorter. NaN propagates.
struct SegmentMaxAttrs {
  int axis = -2;
  int64_t segment = 1;
  bool operator==(const SegmentMaxAttrs&) const = default;
};
// upsample_nearest along `axis` to length `size`, PyTorch 'nearest' rule for f32 tensors
// (torch.nn.functional.interpolate(mode='nearest')): src = dst when out == in;
// src = dst >> 1 when out == 2 * in; otherwise scale = float(in) / float(out) and
// src = min(int64(floorf(float(dst) * scale)), in - 1), all in float32.
struct UpsampleNearestAttrs {
  int axis = -2;
  int64_t size = 1;
  bool operator==(const UpsampleNearestAttrs&) const = default;
};
// That rule's source index of output position `dst` (0 <= dst < out), for every backend, so
// each picks the same elements (aten/src/ATen/native/UpSample.h, nearest_idx). Torch uses
// double for f64 tensors, which differs (in = 2, out = 82, dst = 41 gives 0 in f32, 1 in
// f64); the models run f32. Checked against torch 1.13 interpolate on f32 for all in < 80,
// out < 200.
inline int64_t upsample_nearest_source(int64_t in, int64_t out, int64_t dst) {
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float scale = float(in) / float(out);
  const auto src = int64_t(std::floor(float(dst) * scale));
  return src < in - 1 ? src : in - 1;
}

// concat: >= 1 inputs of one dtype, equal dims except along axis.
struct ConcatAttrs {
  int axis = 0;
  bool operator==(const ConcatAttrs&) const = default;
};
// slice: [start, end) with step >= 1 along axis; start/end clamp like Python slicing
// (negative counts from the end).
struct SliceAttrs {
  int axis = 0;
  int64_t start = 0;
  int64_t end = INT64_MAX;
  int64_t step = 1;
  bool operator==(const SliceAttrs&) const = default;
};
// pad: constant padding along one axis.
struct PadAttrs {
  int axis = 0;
  int64_t before = 0;
  int64_t after = 0;
  float value = 0.0f;
  bool operator==(const PadAttrs&) const = default;
};
// transpose: y.dims[i] = x.dims[perm[i]]; rank entries of perm are used.
struct TransposeAttrs {
  int rank = 0;
  std::array<int, kMaxRank> perm{};
  bool operator==(const TransposeAttrs&) const = default;
};
// reshape: same element count, row-major order; one dim may be -1. Planned as a view
// (no copy) of its contiguous input.
struct ReshapeAttrs {
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};
  bool operator==(const ReshapeAttrs&) const = default;
};
// roll: y[(i + shift) mod N] = x[i] along axis (torch.roll).
struct RollAttrs {
  int axis = 0;
  int64_t shift = 0;
  bool operator==(const RollAttrs&) const = default;
};
// where: inputs cond (u8, any nonzero = true), a, b (same dtype); y = cond ? a : b with
// broadcasting.
using WhereAttrs = NoAttrs<OpKind::where>;

// attention (fused): inputs q [B, H, Nq, hd], k [B, H, Nk, hd], v [B, H, Nk, hv], then an
// optional key padding mask [B, Nk] u8 (1 = attend, 0 = padding) with has_key_padding_mask.
// y = softmax(q k^T * scale + masks) v, output [B, H, Nq, hv]. causal masks j > i + (Nk - Nq).
// A query with no visible key gets zeros. with_lse adds a second output, f32 [B, H, Nq]: the
// log-sum-exp log sum_j exp(scale q_i . k_j) over the visible keys (-inf where there is none),
// with which a softmax over further keys can continue (axial_attention's direct state).
// q and y are f32; k and v are f32, or both bf16 (a bf16 KV cache): their values are the
// bf16 numbers widened exactly to f32, and logits, softmax statistics and sums stay f32.
struct AttentionAttrs {
  float scale = 1.0f;
  bool causal = false;
  bool has_key_padding_mask = false;
  bool with_lse = false;
  bool operator==(const AttentionAttrs&) const = default;
};
// axial_attention (the Combiner axial joint softmax, docs/models.md#combiner-axial): inputs q [B, H, N, hd],
// k [B, H, N, hd], v [B, H, N, hv], ks [B, H, N, hd], vs [B, H, N, hv], then an optional key
// padding mask [B, N] u8 with has_key_padding_mask. N = n * segment; position i = u * segment + t
// is row u, column t. Query i attends, in ONE softmax, to the direct keys k[(u, j)] with values
// v[(u, j)] for j in [0, segment) (causal: j <= t) and to the column slots (r, t) with key
// ks[(r, t)] and value vs[(r, t)] for r in [0, n) (causal: r < u; bidirectional: every r,
// the own row included). The mask drops a padded position both as a direct key and as a
// column slot. y = softmax(scale * logits) values, [B, H, N, hv]; a query with no visible
// slot gets zeros. Cost O(N * (segment + n) * (hd + hv)).
// has_direct_state: inputs 1 and 2 are instead the softmax over the direct keys, already
// done: y0 [B, H, N, hv] and its log-sum-exp lse0 [B, H, N] (attention with_lse on the rows;
// -inf: no direct key), and y continues that softmax over the column slots. The mask then
// applies to the column slots only. Cost O(N * n * (hd + hv)).
struct AxialAttentionAttrs {
  float scale = 1.0f;
  int64_t segment = 1;
  bool causal = false;
  bool has_key_padding_mask = false;
  bool has_direct_state = false;
  bool operator==(const AxialAttentionAttrs&) const = default;
};
// sparse_attention: like attention, but query i of (b, h) sees only the keys listed in
// indices [B or 1, H or 1, Nq, kk] (i32, broadcast over batch/heads). -1 marks an unused
// slot; a repeated index counts once per occurrence. Output [B, H, Nq, hv]. A query with no
// valid index gets zeros. Cost O(Nq * kk * hd).
// k and v may both be bf16, as for attention (the gathered rows are then half the bytes).
struct SparseAttentionAttrs {
  float scale = 1.0f;
  bool operator==(const SparseAttentionAttrs&) const = default;
};

using OpAttrs = std::variant<std::monostate
#define LR_OP(name, Attrs) , Attrs
#include "longrun/ops/op_list.inc"
                             >;

}  // namespace longrun
