// A tensor viewed as [outer, n, inner] around one axis: the "lines" of the kernels that work
// along an axis (scans, top-k, the DCT family, axis copies). Shared by the cpu and cuda
// backends; usable in device code when compiled by nvcc.
#pragma once

#include <cstdint>

#include "longrun/tensor_desc.h"

#if defined(__CUDACC__)
#define LR_HOST_DEVICE __host__ __device__
#else
#define LR_HOST_DEVICE
#endif

namespace longrun {

// Line l starts at element (l / inner) * n * inner + l % inner and steps by inner.
struct AxisLines {
  int64_t outer = 1, n = 0, inner = 1;
  LR_HOST_DEVICE int64_t count() const { return outer * inner; }
};

inline AxisLines axis_lines(const TensorDesc& d, int axis) {
  AxisLines l;
  l.n = d.dim(axis);
  for (int i = 0; i < axis; ++i) l.outer *= d.dim(i);
  for (int i = axis + 1; i < d.rank(); ++i) l.inner *= d.dim(i);
  return l;
}

}  // namespace longrun
