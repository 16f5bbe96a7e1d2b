// Glue of the cpu cummax / cumsum / segment_max / upsample_nearest kernels (no intrinsics here):
// [outer, n, inner] geometry, column blocks for the vector scans, element-wise scans of
// innermost-axis lines, threading, reference fallbacks.
#include "cpu/scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "axis_lines.h"
#include "cpu/elementwise.h"

namespace longrun::cpu {
namespace {

// Columns per work unit of the vector scans: 256 floats = one 1 KB stripe (16 lines) per
// row, long enough for the hardware prefetcher to stream each row's stripe.
constexpr int64_t kColumnBlock = 256;

bool f32_contiguous(const KernelArgs& args) {
  const TensorDesc& x = args.inputs[0].desc;
  const TensorDesc& y = args.outputs[0].desc;
  return x.dtype() == DType::f32 && y.dtype() == DType::f32 && x.is_contiguous() && y.is_contiguous();
}

// The reference's running-max step (torch.cummax): NaN sticks; equal values take the later.
inline float max_step(float run, float v) {
  return (std::isnan(v) || (!std::isnan(run) && v >= run)) ? v : run;
}

constexpr float kNegInf = -__builtin_inff();

// Runs fn(o, c0, w) for every (outer slab, column block) unit in parallel; `rows` is the
// per-unit row count used to size chunks.
template <typename Fn>
void for_column_blocks(ThreadPool* pool, const AxisLines& l, int64_t rows, Fn fn) {
  const int64_t blocks = (l.inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t work = std::max<int64_t>(1, rows * std::min(l.inner, kColumnBlock));
  parallel_ranges(pool, l.outer * blocks, std::max<int64_t>(1, 16384 / work), [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t o = u / blocks, c0 = (u % blocks) * kColumnBlock;
      fn(o, c0, std::min(kColumnBlock, l.inner - c0));
    }
  });
}

// cummax and cumsum: column scans for inner > 1, else one element scan per line (nothing to
// vectorise across). `step` is the scalar twin of the vector step; both start from the
// first element of the line and store `empty` first when exclusive.
template <class Step>
Status run_running_scan(const KernelArgs& args, int axis, bool reverse, bool exclusive, RunningScanCols cols,
                        float empty, Step step) {
  const TensorDesc& xd = args.inputs[0].desc;
  if (xd.numel() == 0) return {};
  const AxisLines l = axis_lines(xd, xd.normalize_axis(axis));
  const float* x = args.inputs[0].ptr<const float>();
  float* y = args.outputs[0].ptr<float>();
  if (l.inner > 1) {
    for_column_blocks(args.pool, l, l.n, [&](int64_t o, int64_t c0, int64_t w) {
      const int64_t off = o * l.n * l.inner + c0;
      cols(x + off, y + off, l.n, w, l.inner, reverse, exclusive);
    });
    return {};
  }
  parallel_ranges(args.pool, l.outer, std::max<int64_t>(1, 16384 / l.n), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* xl = x + o * l.n;
      float* yl = y + o * l.n;
      float run = 0.0f;
      for (int64_t t = 0; t < l.n; ++t) {
        const int64_t i = reverse ? l.n - 1 - t : t;
        if (exclusive) yl[i] = t == 0 ? empty : run;
        run = t == 0 ? xl[i] : step(run, xl[i]);
        if (!exclusive) yl[i] = run;
      }
    }
  });
  return {};
}

Status run_cummax(const KernelArgs& args, const ScanIsa& isa) {
  if (!f32_contiguous(args)) return reference_cummax(args);
  const auto& a = args.attr<CummaxAttrs>();
  return run_running_scan(args, a.axis, a.reverse, a.exclusive, isa.cummax_cols, kNegInf,
                          [](float run, float v) { return max_step(run, v); });
}

Status run_cumsum(const KernelArgs& args, const ScanIsa& isa) {
  if (!f32_contiguous(args)) return reference_cumsum(args);
  const auto& a = args.attr<CumsumAttrs>();
  return run_running_scan(args, a.axis, a.reverse, a.exclusive, isa.cumsum_cols, 0.0f,
                          [](float run, float v) { return run + v; });
}

Status run_segment_max(const KernelArgs& args, const ScanIsa& isa) {
  if (!f32_contiguous(args)) return reference_segment_max(args);
  const auto& a = args.attr<SegmentMaxAttrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  const int axis = xd.normalize_axis(a.axis);
  if (xd.numel() == 0 || args.outputs[0].desc.numel() == 0) return {};
  const AxisLines l = axis_lines(xd, axis);
  const int64_t segments = args.outputs[0].desc.dim(axis);
  const float* x = args.inputs[0].ptr<const float>();
  float* y = args.outputs[0].ptr<float>();
  if (l.inner > 1) {
    for_column_blocks(args.pool, l, l.n, [&](int64_t o, int64_t c0, int64_t w) {
      isa.segment_max_cols(x + o * l.n * l.inner + c0, y + o * segments * l.inner + c0, l.n, w, l.inner,
                           a.segment);
    });
    return {};
  }
  parallel_ranges(args.pool, l.outer, std::max<int64_t>(1, 16384 / l.n), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* xl = x + o * l.n;
      for (int64_t b = 0, e = 0, s = 0; b < l.n; b = e, ++s) {
        e = l.n - b < a.segment ? l.n : b + a.segment;
        float run = kNegInf;
        for (int64_t i = b; i < e; ++i) run = max_step(run, xl[i]);
        y[o * segments + s] = run;
      }
    }
  });
  return {};
}

}  // namespace

Status cpu_cummax_f32_avx2(const KernelArgs& args) { return run_cummax(args, kScanAvx2); }
Status cpu_cumsum_f32_avx2(const KernelArgs& args) { return run_cumsum(args, kScanAvx2); }
Status cpu_segment_max_f32_avx2(const KernelArgs& args) { return run_segment_max(args, kScanAvx2); }
Status cpu_cummax_f32_avx512(const KernelArgs& args) { return run_cummax(args, kScanAvx512); }
Status cpu_cumsum_f32_avx512(const KernelArgs& args) { return run_cumsum(args, kScanAvx512); }
Status cpu_segment_max_f32_avx512(const KernelArgs& args) { return run_segment_max(args, kScanAvx512); }

Status cpu_upsample_nearest_f32(const KernelArgs& args) {
  if (!f32_contiguous(args)) return reference_upsample_nearest(args);
  const auto& a = args.attr<UpsampleNearestAttrs>();
  const TensorDesc& xd = args.inputs[0].desc;
  if (args.outputs[0].desc.numel() == 0) return {};
  const AxisLines l = axis_lines(xd, xd.normalize_axis(a.axis));
  const float* x = args.inputs[0].ptr<const float>();
  float* y = args.outputs[0].ptr<float>();
  // Units: one output row (inner floats) each, or for inner == 1 one output line.
  if (l.inner > 1) {
    parallel_ranges(
        args.pool, l.outer * a.size, std::max<int64_t>(1, 16384 / l.inner), [&](int64_t u0, int64_t u1) {
          for (int64_t u = u0; u < u1; ++u) {
            const int64_t o = u / a.size, d = u % a.size;
            std::memcpy(y + u * l.inner, x + (o * l.n + upsample_nearest_source(l.n, a.size, d)) * l.inner,
                        size_t(l.inner) * sizeof(float));
          }
        });
    return {};
  }
  parallel_ranges(args.pool, l.outer, std::max<int64_t>(1, 16384 / a.size), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t d = 0; d < a.size; ++d)
        y[o * a.size + d] = x[o * l.n + upsample_nearest_source(l.n, a.size, d)];
  });
  return {};
}

}  // namespace longrun::cpu
