// Reference kernels for cummax, cumsum, segment_max and upsample_nearest: plain loops over
// each line along the axis.
#include <cmath>
#include <cstdint>
#include <limits>

#include "longrun/ops/schema.h"
#include "reference/access.h"

namespace longrun {
namespace {

// Running-max update with torch.cummax's rule: a NaN, once seen, sticks (nothing compares
// >= NaN), and on equal values the later element is taken (`v >= run`), which decides
// -0 vs +0 the same way torch does.
double max_step(double run, double v) {
  if (std::isnan(v) || (!std::isnan(run) && v >= run)) return v;
  return run;
}

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

}  // namespace

Status reference_cummax(const KernelArgs& args) {
  const auto& a = args.attr<CummaxAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t n = x.desc.dim(axis);
  const int64_t xs = x.desc.stride(axis), ys = y.desc.stride(axis);
  ref::for_each_line(x.desc, y.desc, axis, [&](int64_t in_base, int64_t out_base) {
    double run = kNegInf;  // exclusive scans start from the identity of max
    for (int64_t t = 0; t < n; ++t) {
      const int64_t i = a.reverse ? n - 1 - t : t;
      const double v = ref::load(x, in_base + i * xs);
      if (a.exclusive) {
        ref::store(y, out_base + i * ys, run);
        run = max_step(run, v);
      } else {
        run = max_step(run, v);
        ref::store(y, out_base + i * ys, run);
      }
    }
  });
  return {};
}

// cumsum is the one reference kernel that accumulates in f32, not double: attrs.h defines
// the op as the in-order f32 sum (one rounding per step), so this loop is that definition.
Status reference_cumsum(const KernelArgs& args) {
  const auto& a = args.attr<CumsumAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t n = x.desc.dim(axis);
  const int64_t xs = x.desc.stride(axis), ys = y.desc.stride(axis);
  ref::for_each_line(x.desc, y.desc, axis, [&](int64_t in_base, int64_t out_base) {
    float run = 0.0f;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t i = a.reverse ? n - 1 - t : t;
      const auto v = float(ref::load(x, in_base + i * xs));  // an f32 input: exact
      if (a.exclusive) ref::store(y, out_base + i * ys, t == 0 ? 0.0 : double(run));
      run = t == 0 ? v : run + v;  // the first term as is: -0 stays -0
      if (!a.exclusive) ref::store(y, out_base + i * ys, double(run));
    }
  });
  return {};
}

Status reference_segment_max(const KernelArgs& args) {
  const auto& a = args.attr<SegmentMaxAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t n = x.desc.dim(axis);
  const int64_t segments = y.desc.dim(axis);
  const int64_t xs = x.desc.stride(axis), ys = y.desc.stride(axis);
  ref::for_each_line(x.desc, y.desc, axis, [&](int64_t in_base, int64_t out_base) {
    for (int64_t s = 0; s < segments; ++s) {
      const int64_t begin = s * a.segment;
      const int64_t end = n - begin < a.segment ? n : begin + a.segment;  // ragged last segment
      double run = kNegInf;
      for (int64_t i = begin; i < end; ++i) run = max_step(run, ref::load(x, in_base + i * xs));
      ref::store(y, out_base + s * ys, run);
    }
  });
  return {};
}

Status reference_upsample_nearest(const KernelArgs& args) {
  const auto& a = args.attr<UpsampleNearestAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int axis = x.desc.normalize_axis(a.axis);
  const int64_t in = x.desc.dim(axis);
  const int64_t xs = x.desc.stride(axis), ys = y.desc.stride(axis);
  ref::for_each_line(x.desc, y.desc, axis, [&](int64_t in_base, int64_t out_base) {
    for (int64_t d = 0; d < a.size; ++d) {
      const int64_t s = upsample_nearest_source(in, a.size, d);
      ref::store(y, out_base + d * ys, ref::load(x, in_base + s * xs));
    }
  });
  return {};
}

}  // namespace longrun
