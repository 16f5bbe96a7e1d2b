// Reduced-precision matmul, shared by every backend that offers a precision other than f32
// (docs/usage.md#precision): which matmuls are linear layers that run at the reduced
// precision, and the scalar definition of the int8 format they use. A backend's fast kernels
// are tested against these definitions; the reference backend runs them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "longrun/dtype.h"
#include "longrun/graph.h"
#include "longrun/ops/attrs.h"
#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun::ops {

// The weight layout of a linear layer y = act(alpha · x · op(W) + bias + beta · C).
//   nk: W[N, K] with trans_b (a PyTorch nn.Linear weight); kn: W[K, N] without.
//   none: not a linear layer, the matmul keeps f32.
enum class LinearWeight : uint8_t { none, nk, kn };

// The layout when the matmul (inputs `in`, output `out`) is a linear layer: x[..., M, K] f32
// (rank >= 2, not transposed, rows = every leading index), a rank-2 f32/f16/bf16/i8 weight, an
// f32 bias [N] when present, an f32 C of the output's shape when present, all contiguous, 0 <
// K <= s8::kMaxK. The caller also requires that the weight is a constant of the model (its
// role): activations times activations (attention's Q·Kᵀ and P·V) stay f32.
LinearWeight linear_weight_layout(const MatmulAttrs& at, std::span<const TensorDesc> in,
                                  const TensorDesc& out);

namespace s8 {

// The int8 format:
//   scale[r] = max_k |x[r, k]| / 127 (one f32 division); q[r, k] = rhe(clamp(x[r, k] / scale[r],
//   -127, 127)) as s8, rhe = round half to even. A row whose scale is 0 (all zeros, or a maximum
//   so small that max / 127 underflows to 0) has q = 0. An activation row holding an infinity
//   or a NaN gets scale NaN and q = 0, so its output row is NaN; a weight holding one is an
//   error (quantize_weight).
//   Activations are quantized per row of x, weights per output channel n (a row of W[N, K], a
//   column of W[K, N]).
//   acc[m, n] = Σ_k qa[m, k] · qw[n, k] in int32: exact while 127 · 127 · K < 2^31 (kMaxK).
//   y[m, n] = float(acc[m, n]) · (scale_a[m] · scale_w[n]) (the scale product rounded to f32
//   first, then one f32 multiply), then the matmul epilogue act(alpha · y + bias[n] + beta · C).
inline constexpr int kQMax = 127;
// The largest K whose int32 sums are exact: 127 · 127 · K < 2^31.
inline constexpr int64_t kMaxK = (int64_t(1) << 31) / (int64_t(kQMax) * kQMax);
static_assert(int64_t(kQMax) * kQMax * kMaxK < (int64_t(1) << 31) &&
              int64_t(kQMax) * kQMax * (kMaxK + 1) >= (int64_t(1) << 31));

// Round half to even of a float of magnitude at most 2^22, independent of the FPU's rounding
// mode.
float round_half_even(float x);

// The row quantization: rows r < rows of `cols` floats (row r at src + r * ld) to q (row r at
// q + r * ldq) and scale[r].
void quantize_rows_reference(const float* src, int64_t rows, int64_t cols, int64_t ld, int8_t* q, int64_t ldq,
                             float* scale);

// A weight quantized per output channel: q[n, k] (channel n's K values) and scale[n].
struct QuantizedWeight {
  int64_t n = 0, k = 0;
  std::vector<int8_t> q;     // [n, k] row-major
  std::vector<float> scale;  // [n]
};

// Quantizes a linear layer's weight of `dtype` (f32, f16 or bf16; f16/bf16 widened exactly)
// stored contiguously in `layout` (nk: [n, k]; kn: [k, n], quantized per column). Errors: a
// negative or too large dimension (k > kMaxK), another dtype or layout, a non-finite element
// (named by its index in the stored weight), no memory.
Result<QuantizedWeight> quantize_weight(const void* w, DType dtype, LinearWeight layout, int64_t n,
                                        int64_t k);

// Whether a quantized weight's scales (graph.h ChannelScales) are per output channel of a
// linear layer `layout` with n channels of k: nk: n channels of stride k; kn: n of stride 1.
bool scales_match(const ChannelScales& s, LinearWeight layout, int64_t n, int64_t k);

// A weight quantized in the model file (dtype i8 with its scales) as the format's
// QuantizedWeight when the graph uses it as a linear layer `layout` with n channels of k: its
// values and scales as they are (q and scale are what quantize_weight returns for the
// unquantized weight, so an int8 session gives the same bytes on either file). Errors: scales
// for other channels (naming the weight and both layouts), no memory.
Result<QuantizedWeight> stored_weight(const Value& w, LinearWeight layout, int64_t n, int64_t k);

// The product without the epilogue: y[m, n] (rows ldy apart) from quantized activations qa
// (row m at qa + m * ldqa) with scales sa and a quantized weight.
void gemm_s8_reference(const int8_t* qa, int64_t ldqa, const float* sa, int64_t m, const QuantizedWeight& w,
                       float* y, int64_t ldy);

}  // namespace s8

// The f32 values of a quantized weight (dequantize_weight, graph.h) in a new buffer. Errors:
// no memory (naming the weight).
Result<std::vector<float>> dequantized_copy(const Value& w);

}  // namespace longrun::ops

namespace longrun::ops::bf16 {

// The bf16 format of a linear layer (docs/usage.md#precision):
//   round(v) = bf16_to_f32(f32_to_bf16(v)): round to nearest even to 8 significant bits (a
//   finite value past the largest bf16 becomes an infinity; NaN stays NaN, an infinity stays
//   one). A weight stored as bf16 is taken as it is; an f32 or f16 weight is rounded once.
//   y[m, n] = act(alpha · Σ_k round(x[m, k]) · round(W[k, n]) + bias[n] + beta · C[m, n]).
//   Each product of two bf16 values is exact in f32 (16 significant bits), so the products
//   are the same everywhere; their sum is taken in f32 or wider in an unspecified order, so
//   implementations agree within that sum's rounding error, a tolerance, not bit for bit.
inline float round(float v) { return bf16_to_f32(f32_to_bf16(v)); }

// A linear layer's weight rounded to bf16: w[n, k] (channel n's K values, row-major).
struct RoundedWeight {
  int64_t n = 0, k = 0;
  std::vector<uint16_t> w;
};

// Rounds a linear layer's weight of `dtype` (f32, f16 or bf16) stored contiguously in
// `layout` (nk: [n, k]; kn: [k, n]). Errors: a negative dimension, a null pointer for a
// non-empty weight, another dtype or layout, no memory.
Result<RoundedWeight> round_weight(const void* w, DType dtype, LinearWeight layout, int64_t n, int64_t k);

// The product without the epilogue: y[m, n] (rows ldy apart) = Σ_k round(x[m, k]) · w[n, k]
// for rows m < rows of x (row m at x + m * ldx), summed in double and rounded once to f32.
void gemm_bf16_reference(const float* x, int64_t ldx, int64_t rows, const RoundedWeight& w, float* y,
                         int64_t ldy);

}  // namespace longrun::ops::bf16
