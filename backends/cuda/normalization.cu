// CUDA kernels of softmax and layer_norm (semantics: attrs.h; oracle:
// ops/reference/normalization.cpp).
//
// Parallelisation: one block per line (a row along the reduced axis), blocks striding over
// the lines; the block's threads stride along the line in chunks of blockDim, so lines of any
// length work, and the partial results are combined by a fixed-order shuffle tree (the
// result is the same bits run to run).
//
// Precision: both kernels compute in double, as the reference does, so every rule of the
// oracle (logits x * scale + mask formed in double, NaN lines, all -inf lines, +inf logits,
// two-pass mean/variance) carries over unchanged and the only difference left is the f32
// rounding of the output.
//
// In place (schema inplace_input = 0 for both): every pass but the last only reads, and the
// block reductions between passes hold each thread at a barrier until the whole block has
// finished reading; the last pass reads and writes the same element in the same thread.
#include <math_constants.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {
namespace {

constexpr int kMaxThreads = 256;
constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // blocks stride over the lines beyond this

// Threads for lines of `len` elements: a multiple of 32 (the block reduction needs whole
// warps), no more than the line can use.
int threads_for(int64_t len) {
  const int64_t t = (len + 31) / 32 * 32;
  return int(t < 32 ? 32 : (t > kMaxThreads ? kMaxThreads : t));
}

unsigned blocks_for(int64_t lines) { return unsigned(lines < kMaxBlocks ? lines : kMaxBlocks); }

struct Plus {
  __device__ double operator()(double a, double b) const { return a + b; }
};
// Max that propagates NaN: a NaN logit anywhere makes the line's max NaN.
struct NanMax {
  __device__ double operator()(double a, double b) const {
    return isnan(a) ? a : (isnan(b) ? b : fmax(a, b));
  }
};

// Reduction over the block (blockDim.x a multiple of 32) by xor shuffles, which every lane
// ends with bitwise the same; `shared` holds 32 values. Contains __syncthreads: call from
// every thread.
template <typename Op>
__device__ double block_reduce(double v, double* shared, Op op, double identity) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // the previous reduction's readers of `shared` are done
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  double t = lane < warps ? shared[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) t = op(t, __shfl_xor_sync(0xffffffffu, t, o));
  return t;
}

// ---- softmax ----

// The lines of x along the softmax axis, x viewed as [outer, len, inner], and how the mask
// and the causal rule see them.
struct SoftmaxGeom {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t mask_stride[kMaxRank] = {};  // mask element stride per x dim; 0 where it broadcasts
  int64_t mask_axis_stride = 0;        // mask_stride along the softmax axis
  int64_t len = 0, inner = 1, lines = 0;
  double scale = 1.0;
  bool causal = false;
  int64_t causal_shift = 0;  // cols - rows: row i keeps columns j <= i + causal_shift
};

// Where line r starts in x and in the mask, and its last visible column under causal.
struct SoftmaxLine {
  int64_t x_base, mask_base, last_visible;
};

__device__ SoftmaxLine softmax_line(const SoftmaxGeom& g, int64_t r) {
  SoftmaxLine s;
  s.x_base = (r / g.inner) * g.len * g.inner + r % g.inner;
  s.mask_base = 0;
  int64_t rem = s.x_base, row = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    const int64_t idx = rem % g.dims[d];
    rem /= g.dims[d];
    s.mask_base += idx * g.mask_stride[d];
    if (d == g.rank - 2) row = idx;
  }
  s.last_visible = g.causal ? row + g.causal_shift : g.len;
  return s;
}

// The logit of column j as the reference forms it: x * scale + mask in double, -inf where
// the causal rule hides the column (whatever the mask holds there).
__device__ double softmax_logit(const float* x, const float* mask, const SoftmaxGeom& g, const SoftmaxLine& s,
                                int64_t j) {
  if (j > s.last_visible) return -CUDART_INF;
  double l = double(x[s.x_base + j * g.inner]) * g.scale;
  if (mask != nullptr) l += double(mask[s.mask_base + j * g.mask_axis_stride]);
  return l;
}

// One block per line: max (NaN-propagating), then the sum of exp(l - max), then the
// probabilities, each pass recomputing the logits from x and the mask.
__global__ void softmax_kernel(const float* x, const float* mask, float* y, SoftmaxGeom g) {
  __shared__ double shared[32];
  for (int64_t r = blockIdx.x; r < g.lines; r += gridDim.x) {
    const SoftmaxLine s = softmax_line(g, r);
    double m = -CUDART_INF;
    for (int64_t j = threadIdx.x; j < g.len; j += blockDim.x)
      m = NanMax{}(m, softmax_logit(x, mask, g, s, j));
    m = block_reduce(m, shared, NanMax{}, -CUDART_INF);
    // A NaN logit makes the line NaN, a line of only -inf logits is zeros (reference
    // softmax_in_place); both branches are uniform over the block.
    const bool special = isnan(m) || m == -CUDART_INF;
    double sum = 0.0;
    if (!special) {
      for (int64_t j = threadIdx.x; j < g.len; j += blockDim.x)
        sum += exp(softmax_logit(x, mask, g, s, j) - m);
      sum = block_reduce(sum, shared, Plus{}, 0.0);
    }
    for (int64_t j = threadIdx.x; j < g.len; j += blockDim.x) {
      const double p = special ? (isnan(m) ? m : 0.0) : exp(softmax_logit(x, mask, g, s, j) - m) / sum;
      y[s.x_base + j * g.inner] = float(p);
    }
  }
}

Status run_softmax(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "softmax"));
  const SoftmaxAttrs& at = args.attr<SoftmaxAttrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  const TensorView* mask = at.has_mask ? &args.inputs[1] : nullptr;
  if (xd.numel() == 0) return {};
  const int axis = xd.normalize_axis(at.axis);
  SoftmaxGeom g;
  g.rank = xd.rank();
  g.len = xd.dim(axis);
  for (int d = 0; d < g.rank; ++d) g.dims[d] = xd.dim(d);
  for (int d = axis + 1; d < g.rank; ++d) g.inner *= xd.dim(d);
  g.lines = xd.numel() / g.len;
  g.scale = double(at.scale);
  if (mask != nullptr) {
    // The mask is right-aligned against x; its dims of 1 (and the missing leading ones) repeat.
    const int shift = g.rank - mask->desc.rank();
    for (int d = shift; d < g.rank; ++d)
      g.mask_stride[d] = mask->desc.dim(d - shift) == 1 ? 0 : mask->desc.stride(d - shift);
    g.mask_axis_stride = g.mask_stride[axis];
  }
  if (at.causal) {  // shape inference guarantees rank >= 2 and the last axis
    g.causal = true;
    g.causal_shift = xd.dim(g.rank - 1) - xd.dim(g.rank - 2);
  }
  softmax_kernel<<<blocks_for(g.lines), threads_for(g.len), 0, args.ctx->stream>>>(
      args.inputs[0].ptr<const float>(), mask != nullptr ? mask->ptr<const float>() : nullptr,
      args.outputs[0].ptr<float>(), g);
  LR_CUDA_LAUNCHED("softmax_kernel");
  return {};
}

// ---- layer_norm ----

// One block per row of D: the mean, then the biased variance around it (two passes, as the
// reference, so that |mean| >> std loses nothing), then y = (x - mean) / sqrt(var + eps) *
// gamma + beta, all in double.
__global__ void layer_norm_kernel(const float* x, const void* gamma, DType gamma_type, const void* beta,
                                  DType beta_type, float* y, int64_t rows, int64_t D, double eps) {
  __shared__ double shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * D;
    double s = 0.0;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) s += double(xr[d]);
    const double mean = block_reduce(s, shared, Plus{}, 0.0) / double(D);
    double v = 0.0;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      const double c = double(xr[d]) - mean;
      v += c * c;
    }
    const double var = block_reduce(v, shared, Plus{}, 0.0) / double(D);
    const double inv = 1.0 / sqrt(var + eps);
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
      const double g = load_as_float(gamma, gamma_type, d), b = load_as_float(beta, beta_type, d);
      y[r * D + d] = float((double(xr[d]) - mean) * inv * g + b);
    }
  }
}

Status run_layer_norm(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "layer_norm"));
  const TensorDesc& xd = args.inputs[0].desc;
  if (xd.numel() == 0) return {};
  const int64_t D = xd.dim(xd.rank() - 1);
  const int64_t rows = xd.numel() / D;
  layer_norm_kernel<<<blocks_for(rows), threads_for(D), 0, args.ctx->stream>>>(
      args.inputs[0].ptr<const float>(), args.inputs[1].data, args.inputs[1].desc.dtype(),
      args.inputs[2].data, args.inputs[2].desc.dtype(), args.outputs[0].ptr<float>(), rows, D,
      double(args.attr<LayerNormAttrs>().eps));
  LR_CUDA_LAUNCHED("layer_norm_kernel");
  return {};
}

}  // namespace

// Every dtype shape inference allows is handled (x f32; gamma/beta f32/f16/bf16), so no
// supports step.
Kernel make_kernel_softmax() { return Kernel{run_softmax, nullptr, nullptr}; }
Kernel make_kernel_layer_norm() { return Kernel{run_layer_norm, nullptr, nullptr}; }

}  // namespace longrun::cuda
