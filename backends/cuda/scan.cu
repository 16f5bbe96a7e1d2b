// CUDA kernels of cummax, cumsum and segment_max (semantics: attrs.h; oracle:
// ops/reference/scan.cpp). All three are exact (tolerance 0).
//
// Parallelisation: x is viewed as [outer, n, inner] around the axis. cumsum runs one thread
// per line (an (outer, inner) pair) that walks the axis in order, which is what makes its
// one-rounding-per-step sum exact; adjacent threads take adjacent inner indices, so the loads
// are coalesced whenever the axis is not the last. cummax does the same when the lines alone
// fill the device (or the lines are short); otherwise it splits each line into chunks:
// cummax_chunk_fold_kernel folds every chunk (one thread per (line, chunk)) into scratch,
// then cummax_chunk_scan_kernel rescans every chunk starting from the fold of the chunks
// before it. That is exact because the running-max step is associative: a fold is the last
// NaN if there is one, else the last element equal (==, so -0 == +0) to the maximum, and
// folding two parts' folds gives the fold of the whole. LONGRUN_CUDA_CUMMAX=serial (read
// once, at the first run) forces the one-thread-per-line kernel, to test or time it.
// segment_max runs one thread per output element, each scanning its segment in order.
//
// Precision: everything is f32 compare/select except cumsum's adds, which are __fadd_rn (one
// IEEE rounding each, never contracted). None of these ops runs in place (schema
// inplace_input = -1).
#include <math_constants.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
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

// Element at scan position t of the line starting at `base` (x[base] is the line's first).
__device__ __forceinline__ int64_t scan_at(const AxisLines& l, int64_t base, int64_t t, bool reverse) {
  return base + (reverse ? l.n - 1 - t : t) * l.inner;
}

// Where line `line` starts.
__device__ __forceinline__ int64_t line_base(const AxisLines& l, int64_t line) {
  return (line / l.inner) * l.n * l.inner + line % l.inner;
}

// One thread per line, walking the axis in scan order.
template <typename Op>
__global__ void scan_kernel(const float* x, float* y, AxisLines l, bool reverse, bool exclusive) {
  LR_GRID_STRIDE(line, l.outer * l.inner) {
    const int64_t base = line_base(l, line);
    float run = Op::identity();
    for (int64_t t = 0; t < l.n; ++t) {
      const int64_t at = scan_at(l, base, t, reverse);
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

// ---- chunked cummax ----

// Each line split into `chunks` chunks of `len` positions in scan order (the last one may be
// shorter, none is empty).
struct ChunkPlan {
  int64_t chunks = 1, len = 0;
};

constexpr int64_t kMinChunk = 32;   // shorter chunks would not pay for the second pass
constexpr int64_t kMaxChunks = 64;  // bounds the carry fold each chunk of the second pass does

// Pass 1, one thread per (line, chunk), chunk-major (adjacent threads: adjacent lines): the
// fold of the chunk into fold[chunk * lines + line].
__global__ void cummax_chunk_fold_kernel(const float* x, float* fold, AxisLines l, ChunkPlan p,
                                         bool reverse) {
  const int64_t lines = l.count();
  LR_GRID_STRIDE(q, lines * p.chunks) {
    const int64_t line = q % lines, begin = (q / lines) * p.len;
    const int64_t end = l.n - begin < p.len ? l.n : begin + p.len;
    const int64_t base = line_base(l, line);
    float run = x[scan_at(l, base, begin, reverse)];
    for (int64_t t = begin + 1; t < end; ++t) run = max_step(run, x[scan_at(l, base, t, reverse)]);
    fold[q] = run;
  }
}

// Pass 2, the same threads: the reference's loop over the chunk, its run starting from the
// fold of the chunks before (from -inf, as the reference, for the first chunk:
// max_step(-inf, v) is v for every v, NaN and -inf included).
__global__ void cummax_chunk_scan_kernel(const float* x, const float* fold, float* y, AxisLines l,
                                         ChunkPlan p, bool reverse, bool exclusive) {
  const int64_t lines = l.count();
  LR_GRID_STRIDE(q, lines * p.chunks) {
    const int64_t line = q % lines, chunk = q / lines, begin = chunk * p.len;
    const int64_t end = l.n - begin < p.len ? l.n : begin + p.len;
    const int64_t base = line_base(l, line);
    float run = -CUDART_INF_F;
    for (int64_t c = 0; c < chunk; ++c) run = max_step(run, fold[c * lines + line]);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t at = scan_at(l, base, t, reverse);
      const float v = x[at];
      if (exclusive) y[at] = run;
      run = max_step(run, v);
      if (!exclusive) y[at] = run;
    }
  }
}

// Whether LONGRUN_CUDA_CUMMAX=serial forces the one-thread-per-line kernel (read once).
bool serial_cummax_forced() {
  static const bool forced = [] {
    const char* e = std::getenv("LONGRUN_CUDA_CUMMAX");
    return e != nullptr && std::strcmp(e, "serial") == 0;
  }();
  return forced;
}

// Chunks per line: enough (line, chunk) threads to fill the device, chunks of at least
// kMinChunk. One chunk (the serial kernel) when the lines alone give a quarter of that.
ChunkPlan plan_chunks(const AxisLines& l, int sm_count) {
  // Resident threads: 2048 per SM (sm_90's limit); 132 SMs (an H100 SXM) if the count reads 0.
  const int64_t fill = int64_t(sm_count > 0 ? sm_count : 132) * 2048;
  const int64_t want = (fill + l.count() - 1) / l.count();
  if (serial_cummax_forced() || want < 4 || l.n < 2 * kMinChunk) return {};
  const int64_t chunks = want < kMaxChunks ? want : kMaxChunks;
  const int64_t even = (l.n + chunks - 1) / chunks;
  const int64_t len = even > kMinChunk ? even : kMinChunk;
  return {(l.n + len - 1) / len, len};  // (chunks - 1) * len < n: no empty chunk
}

Status run_cummax(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(check_contiguous(args, "cummax"));
  const auto& a = args.attr<CummaxAttrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  if (xd.numel() == 0) return {};
  const AxisLines l = axis_lines(xd, xd.normalize_axis(a.axis));
  const ChunkPlan p = plan_chunks(l, args.ctx->props.multiProcessorCount);
  if (p.chunks < 2) return run_scan<CummaxOp, CummaxAttrs>(args, "cummax");
  const int64_t threads = l.count() * p.chunks;
  LR_ASSIGN_OR_RETURN(void* fold, args.ctx->scratch(threads * int64_t(sizeof(float))));
  const unsigned blocks = grid_for(threads, kThreads, args.ctx->props.multiProcessorCount);
  const float* x = args.inputs[0].ptr<const float>();
  cummax_chunk_fold_kernel<<<blocks, kThreads, 0, args.ctx->stream>>>(x, static_cast<float*>(fold), l, p,
                                                                      a.reverse);
  LR_CUDA_LAUNCHED("cummax_chunk_fold_kernel");
  cummax_chunk_scan_kernel<<<blocks, kThreads, 0, args.ctx->stream>>>(
      x, static_cast<const float*>(fold), args.outputs[0].ptr<float>(), l, p, a.reverse, a.exclusive);
  LR_CUDA_LAUNCHED("cummax_chunk_scan_kernel");
  return {};
}

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
