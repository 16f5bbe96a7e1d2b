// CUDA kernels of cummax, cumsum and segment_max (semantics: attrs.h; oracle:
// ops/reference/scan.cpp). All three are exact (tolerance 0).
//
// Parallelisation: x is viewed as [outer, n, inner] around the axis. cummax and cumsum run
// one thread per line (an (outer, inner) pair) that walks the axis in order, which is what
// makes cumsum's one-rounding-per-step sum exact; adjacent threads take adjacent inner
// indices, so the loads are coalesced whenever the axis is not the last. segment_max runs
// one thread per output element, each scanning its segment in order.
//
// Precision: everything is f32 compare/select except cumsum's adds, which are __fadd_rn (one
// IEEE rounding each, never contracted). None of these ops runs in place (schema
// inplace_input = -1).
#include <math_constants.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {
namespace {

constexpr int kThreads = 256;

// The reference's running-max step (torch.cummax's rule): a NaN, once seen, sticks; on equal
// values the later element is taken (v >= run), which decides -0 vs +0.
__device__ __forceinline__ float max_step(float run, float v) {
  return (isnan(v) || (!isnan(run) && v >= run)) ? v : run;
}

// The scans' steps. identity(): what an exclusive scan writes first. combine(run, v): the
// running value after v (the first element starts the run as is: -0 stays -0).
struct CummaxOp {
  __device__ static float identity() { return -CUDART_INF_F; }
  __device__ static float combine(float run, float v) { return max_step(run, v); }
};
struct CumsumOp {
  __device__ static float identity() { return 0.0f; }
  __device__ static float combine(float run, float v) { return __fadd_rn(run, v); }
};

// One thread per line, walking the axis in scan order.
template <typename Op>
__global__ void scan_kernel(const float* x, float* y, AxisLines l, bool reverse, bool exclusive) {
  LR_GRID_STRIDE(line, l.outer * l.inner) {
    const int64_t base = (line / l.inner) * l.n * l.inner + line % l.inner;
    float run = Op::identity();
    for (int64_t t = 0; t < l.n; ++t) {
      const int64_t at = base + (reverse ? l.n - 1 - t : t) * l.inner;
      const float v = x[at];
      if (exclusive) y[at] = run;
      run = t == 0 ? v : Op::combine(run, v);
      if (!exclusive) y[at] = run;
    }
  }
}

template <typename Op, typename Attrs>
Status run_scan(const KernelArgs& args, const char* name) {
  LR_RETURN_IF_ERROR(check_contiguous(args, name));
  const Attrs& a = args.attr<Attrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  if (xd.numel() == 0) return {};
  const AxisLines l = axis_lines(xd, xd.normalize_axis(a.axis));
  const unsigned blocks = grid_for(l.outer * l.inner, kThreads, args.ctx->props.multiProcessorCount);
  scan_kernel<Op><<<blocks, kThreads, 0, args.ctx->stream>>>(
      args.inputs[0].ptr<const float>(), args.outputs[0].ptr<float>(), l, a.reverse, a.exclusive);
  LR_CUDA_LAUNCHED(name);
  return {};
}

Status run_cummax(const KernelArgs& args) { return run_scan<CummaxOp, CummaxAttrs>(args, "cummax"); }
Status run_cumsum(const KernelArgs& args) { return run_scan<CumsumOp, CumsumAttrs>(args, "cumsum"); }

// One thread per output element (outer, s, inner): the max over input positions
// [s * segment, min(n, (s + 1) * segment)) from -inf, in order, with the same step as cummax.
__global__ void segment_max_kernel(const float* x, float* y, AxisLines l, int64_t segment, int64_t segments) {
  LR_GRID_STRIDE(q, l.outer * segments * l.inner) {
    const int64_t in = q % l.inner, s = (q / l.inner) % segments, o = q / (l.inner * segments);
    const int64_t begin = s * segment;
    const int64_t end = l.n - begin < segment ? l.n : begin + segment;  // ragged last segment
    const float* xl = x + o * l.n * l.inner + in;
    float run = -CUDART_INF_F;
    for (int64_t i = begin; i < end; ++i) run = max_step(run, xl[i * l.inner]);
    y[q] = run;
  }
}

Status run_segment_max(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "segment_max"));
  const auto& a = args.attr<SegmentMaxAttrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  const TensorDesc& yd = args.outputs[0].desc;
  if (yd.numel() == 0) return {};
  const int axis = xd.normalize_axis(a.axis);
  const AxisLines l = axis_lines(xd, axis);
  const int64_t segments = yd.dim(axis);
  const unsigned blocks = grid_for(yd.numel(), kThreads, args.ctx->props.multiProcessorCount);
  segment_max_kernel<<<blocks, kThreads, 0, args.ctx->stream>>>(
      args.inputs[0].ptr<const float>(), args.outputs[0].ptr<float>(), l, a.segment, segments);
  LR_CUDA_LAUNCHED("segment_max_kernel");
  return {};
}

}  // namespace

// x is f32 for all three (shape inference), so no supports step.
Kernel make_kernel_cummax() { return Kernel{run_cummax, nullptr, nullptr}; }
Kernel make_kernel_cumsum() { return Kernel{run_cumsum, nullptr, nullptr}; }
Kernel make_kernel_segment_max() { return Kernel{run_segment_max, nullptr, nullptr}; }

}  // namespace longrun::cuda
