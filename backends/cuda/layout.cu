// The cuda layout and lookup kernels: concat, slice, pad, transpose, reshape, roll,
// upsample_nearest (bit copies of elements of any dtype) and embedding (a row gather from
// an f32/f16/bf16 table, widened exactly to f32, with the reference's id check).
//
// Parallelisation: one thread per output element in a grid-stride loop; elements move as
// unsigned integers of the dtype's size (1, 2, 4 or 8 bytes), so every value, NaN payload
// and -0 comes out bit-exact. Two gathers serve all the copies:
// - StridedView: the output flat index walks a strided view of the input (slice's and
//   transpose's views from TensorDesc::slice / permute), its dims merged where possible.
// - AxisShape + a column map: the output as [outer, cols, inner], output column j reading
//   input column map(j) or the fill value (pad, roll, upsample_nearest; concat writes each
//   input into its column range of the output).
// None of these ops runs in place (schema inplace_input = -1), so inputs are never
// overwritten while read.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned long long kNone = ~0ull;

unsigned blocks_for(const KernelArgs& a, int64_t n) {
  return grid_for(n, kThreads, a.ctx->props.multiProcessorCount);
}

const char* bytes_of(const TensorView& v) { return static_cast<const char*>(v.data); }

// ---- strided views: slice, transpose -----------------------------------------------------

// Output flat index -> element offset in a strided view whose dims are the output's.
struct StridedView {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};

  __device__ int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int d = rank - 1; d > 0; --d) {
      const int64_t q = i / dims[d];
      off += (i - q * dims[d]) * strides[d];
      i = q;
    }
    return rank > 0 ? off + i * strides[0] : off;  // i < dims[0] here: no division
  }
};

// Drops dims of 1 and merges a dim into the one outside it when the view steps through
// both as one run (outer stride == inner stride * inner length).
StridedView plan_view(const TensorDesc& view) {
  StridedView v;
  for (int d = 0; d < view.rank(); ++d) {
    const int64_t len = view.dim(d), s = view.stride(d);
    if (len == 1) continue;
    if (v.rank > 0 && v.strides[v.rank - 1] == s * len) {
      v.dims[v.rank - 1] *= len;
    } else {
      v.dims[v.rank] = len;
      ++v.rank;
    }
    v.strides[v.rank - 1] = s;
  }
  return v;
}

template <typename T>
__global__ void strided_copy_kernel(StridedView v, const T* x, T* y, int64_t n) {
  LR_GRID_STRIDE(i, n) y[i] = x[v.offset(i)];
}

// y (contiguous) = the view `view` of the storage at `x`.
Status copy_view(const KernelArgs& a, const TensorDesc& view, const void* x, void* y, const char* name) {
  const int64_t n = view.numel();
  if (n == 0) return {};
  const StridedView v = plan_view(view);
  return for_element_size(dtype_size(view.dtype()), [&](auto tag) -> Status {
    using T = decltype(tag);
    strided_copy_kernel<T><<<blocks_for(a, n), kThreads, 0, a.ctx->stream>>>(v, static_cast<const T*>(x),
                                                                             static_cast<T*>(y), n);
    LR_CUDA_LAUNCHED(name);
    return {};
  });
}

Status run_slice(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "slice"));
  const auto& at = a.attr<SliceAttrs>();
  const TensorView& x = a.inputs[0];
  // Python clamping lives in TensorDesc::slice, as for the reference.
  int64_t offset = 0;
  LR_ASSIGN_OR_RETURN(const TensorDesc view, x.desc.slice(at.axis, at.start, at.end, at.step, &offset));
  const int64_t es = int64_t(dtype_size(x.desc.dtype()));
  return copy_view(a, view, bytes_of(x) + offset * es, a.outputs[0].data, "slice_copy_kernel");
}

Status run_transpose(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "transpose"));
  const auto& at = a.attr<TransposeAttrs>();
  const TensorView& x = a.inputs[0];
  // The permuted view of x has exactly y's dims: y[idx] = view[idx].
  LR_ASSIGN_OR_RETURN(const TensorDesc view,
                      x.desc.permute(std::span<const int>(at.perm.data(), size_t(at.rank))));
  return copy_view(a, view, x.data, a.outputs[0].data, "transpose_copy_kernel");
}

// Both sides are contiguous and row-major: the same bytes. The planner makes reshape a view
// normally; this runs only where it could not (e.g. the output is a graph output).
Status run_reshape(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "reshape"));
  const TensorView& x = a.inputs[0];
  const TensorView& y = a.outputs[0];
  const int64_t bytes = y.desc.nbytes();
  if (bytes == 0 || y.data == x.data) return {};
  LR_CUDA(cudaMemcpyAsync(y.data, x.data, size_t(bytes), cudaMemcpyDeviceToDevice, a.ctx->stream));
  return {};
}

// ---- axis maps: concat, pad, roll, upsample_nearest --------------------------------------

// The copied region seen as [outer, cols, inner]: output column j (of cols) is written at
// dst_start + j of the output's dst_cols columns and reads input column map(j) of src_cols
// (map < 0: the fill value).
struct AxisShape {
  int64_t outer, cols, inner;
  int64_t src_cols, dst_cols, dst_start;
};

// The whole output as [outer, cols, inner] around `axis`, reading an input of src_cols columns.
AxisShape axis_shape(const TensorDesc& out, int axis, int64_t src_cols) {
  const AxisLines l = axis_lines(out, axis);
  return AxisShape{l.outer, l.n, l.inner, src_cols, l.n, 0};
}

template <typename T, typename Map>
__global__ void axis_copy_kernel(Map map, AxisShape s, const T* x, T* y, T fill, int64_t n) {
  const int64_t plane = s.cols * s.inner;
  LR_GRID_STRIDE(i, n) {
    const int64_t o = i / plane, r = i - o * plane;
    const int64_t j = r / s.inner, k = r - j * s.inner;
    const int64_t src = map(j);
    y[(o * s.dst_cols + s.dst_start + j) * s.inner + k] =
        src < 0 ? fill : x[(o * s.src_cols + src) * s.inner + k];
  }
}

template <typename Map>
Status copy_axis(const KernelArgs& a, Map map, const AxisShape& s, const void* x, void* y, size_t elem_size,
                 unsigned long long fill_bits, const char* name) {
  const int64_t n = s.outer * s.cols * s.inner;
  if (n == 0) return {};
  return for_element_size(elem_size, [&](auto tag) -> Status {
    using T = decltype(tag);
    // fill_bits holds the element's bytes from its first (little-endian: low) byte on.
    axis_copy_kernel<T, Map><<<blocks_for(a, n), kThreads, 0, a.ctx->stream>>>(
        map, s, static_cast<const T*>(x), static_cast<T*>(y), T(fill_bits), n);
    LR_CUDA_LAUNCHED(name);
    return {};
  });
}

struct IdentityMap {
  __device__ int64_t operator()(int64_t j) const { return j; }
};

Status run_concat(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "concat"));
  const TensorView& y = a.outputs[0];
  if (y.desc.numel() == 0) return {};
  const int axis = y.desc.normalize_axis(a.attr<ConcatAttrs>().axis);
  int64_t start = 0;  // where the current input begins along axis in the output
  for (const TensorView& x : a.inputs) {
    const int64_t len = x.desc.dim(axis);
    AxisShape s = axis_shape(y.desc, axis, len);
    s.cols = len;
    s.dst_start = start;
    LR_RETURN_IF_ERROR(
        copy_axis(a, IdentityMap{}, s, x.data, y.data, dtype_size(y.desc.dtype()), 0, "concat_copy_kernel"));
    start += len;
  }
  return {};
}

// pad: output column j reads input column j - before, or the fill outside [0, len).
struct PadMap {
  int64_t before, len;
  __device__ int64_t operator()(int64_t j) const {
    const int64_t src = j - before;
    return src >= 0 && src < len ? src : -1;
  }
};

// The pad value as one element of `t`, converted like the reference's store of
// double(value): f16/bf16 round to nearest even, integers truncate (shape inference already
// checked that an integer fill is exact).
unsigned long long fill_bits(DType t, float value) {
  unsigned long long bits = 0;
  auto put = [&bits](const auto v) { std::memcpy(&bits, &v, sizeof v); };
  const double v = value;
  switch (t) {
    case DType::f32: put(float(v)); break;
    case DType::f16: put(f32_to_f16(float(v))); break;
    case DType::bf16: put(f32_to_bf16(float(v))); break;
    case DType::i32: put(int32_t(v)); break;
    case DType::i64: put(int64_t(v)); break;
    case DType::u8: put(uint8_t(v)); break;
    case DType::i8: put(int8_t(v)); break;
  }
  return bits;
}

Status run_pad(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "pad"));
  const auto& at = a.attr<PadAttrs>();
  const TensorView& x = a.inputs[0];
  const TensorView& y = a.outputs[0];
  const int axis = x.desc.normalize_axis(at.axis);
  const DType t = x.desc.dtype();
  return copy_axis(a, PadMap{at.before, x.desc.dim(axis)}, axis_shape(y.desc, axis, x.desc.dim(axis)), x.data,
                   y.data, dtype_size(t), fill_bits(t, at.value), "pad_copy_kernel");
}

// roll: y[(i + shift) mod n] = x[i], i.e. output column j reads (j - shift) mod n.
struct RollMap {
  int64_t n, shift;  // shift in [0, n)
  __device__ int64_t operator()(int64_t j) const { return (j + n - shift) % n; }
};

Status run_roll(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "roll"));
  const auto& at = a.attr<RollAttrs>();
  const TensorView& x = a.inputs[0];
  const TensorView& y = a.outputs[0];
  const int axis = x.desc.normalize_axis(at.axis);
  const int64_t n = x.desc.dim(axis);
  if (n == 0) return {};
  const int64_t shift = ((at.shift % n) + n) % n;  // in [0, n), also for negative shifts
  return copy_axis(a, RollMap{n, shift}, axis_shape(y.desc, axis, n), x.data, y.data,
                   dtype_size(x.desc.dtype()), 0, "roll_copy_kernel");
}

// upsample_nearest: attrs.h's PyTorch f32 rule. `scale` = float(in) / float(out) is
// computed on the host exactly as the reference does; float(dst) * scale is one f32
// rounding (__fmul_rn keeps it from fusing with anything).
struct UpsampleMap {
  int64_t in, out;
  float scale;
  __device__ int64_t operator()(int64_t dst) const {
    if (out == in) return dst;
    if (out == 2 * in) return dst >> 1;
    const int64_t src = (long long)floorf(__fmul_rn(float(dst), scale));
    return src < in - 1 ? src : in - 1;
  }
};

Status run_upsample_nearest(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "upsample_nearest"));
  const auto& at = a.attr<UpsampleNearestAttrs>();
  const TensorView& x = a.inputs[0];
  const TensorView& y = a.outputs[0];
  const int axis = x.desc.normalize_axis(at.axis);
  const int64_t in = x.desc.dim(axis);
  const UpsampleMap map{in, at.size, float(in) / float(at.size)};
  return copy_axis(a, map, axis_shape(y.desc, axis, in), x.data, y.data, dtype_size(x.desc.dtype()), 0,
                   "upsample_nearest_copy_kernel");
}

// ---- embedding ---------------------------------------------------------------------------

// Min-reduces the flat index of every id outside [0, V) into *first (integer atomicMin:
// order-independent), so the error names the first bad position as the reference's does.
__global__ void check_ids_kernel(const void* ids, DType t, int64_t n, int64_t V, unsigned long long* first) {
  LR_GRID_STRIDE(i, n) {
    const long long id = load_as_int(ids, t, i);
    if (id < 0 || id >= V) atomicMin(first, (unsigned long long)i);
  }
}

// One thread: records the first bad id, its int64 value's bits in DeviceError::value (a
// double would round ids above 2^53).
__global__ void report_id_kernel(const void* ids, DType t, const unsigned long long* first,
                                 DeviceError* err) {
  const unsigned long long i = *first;
  if (i != kNone)
    report_error(err, kOutOfRange, 1, (long long)i, __longlong_as_double(load_as_int(ids, t, int64_t(i))));
}

// out[r, d] = table[ids[r], d]. Writes nothing when an id is bad (as the reference, which
// checks all ids first).
__global__ void gather_rows_kernel(const void* table, DType tt, const void* ids, DType it, int64_t D,
                                   int64_t n, const unsigned long long* first, float* out) {
  if (*first != kNone) return;
  LR_GRID_STRIDE(i, n) {
    const int64_t r = i / D, d = i - r * D;
    out[i] = load_as_float(table, tt, load_as_int(ids, it, r) * D + d);  // f16/bf16 widen exactly
  }
}

Status run_embedding(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "embedding"));
  const TensorView& table = a.inputs[0];
  const TensorView& ids = a.inputs[1];
  const TensorView& out = a.outputs[0];
  const int64_t V = table.desc.dim(0), D = table.desc.dim(1);
  const int64_t n_ids = ids.desc.numel(), n = out.desc.numel();
  if (n_ids == 0) return {};
  cudaStream_t stream = a.ctx->stream;
  LR_ASSIGN_OR_RETURN(void* scratch, a.ctx->scratch(int64_t(sizeof(unsigned long long))));
  auto* first = static_cast<unsigned long long*>(scratch);
  LR_CUDA(cudaMemsetAsync(first, 0xff, sizeof(unsigned long long), stream));
  LR_RETURN_IF_ERROR(a.ctx->reset_error());
  check_ids_kernel<<<blocks_for(a, n_ids), kThreads, 0, stream>>>(ids.data, ids.desc.dtype(), n_ids, V,
                                                                  first);
  LR_CUDA_LAUNCHED("check_ids_kernel");
  report_id_kernel<<<1, 1, 0, stream>>>(ids.data, ids.desc.dtype(), first, a.ctx->device_error());
  LR_CUDA_LAUNCHED("report_id_kernel");
  if (n > 0) {
    gather_rows_kernel<<<blocks_for(a, n), kThreads, 0, stream>>>(
        table.data, table.desc.dtype(), ids.data, ids.desc.dtype(), D, n, first, out.ptr<float>());
    LR_CUDA_LAUNCHED("gather_rows_kernel");
  }
  LR_ASSIGN_OR_RETURN(const DeviceError e, a.ctx->take_error());
  if (e.code == kNoError) return {};
  long long id;
  std::memcpy(&id, &e.value, sizeof id);
  return out_of_range("embedding: input 1 (ids " + ids.desc.to_string() + ") at " +
                      flat_index_string(ids.desc, e.index) + ": id " + std::to_string(id) +
                      " out of range [0, " + std::to_string(V) + ")");
}

}  // namespace

Kernel make_kernel_concat() { return {&run_concat, nullptr, nullptr}; }
Kernel make_kernel_slice() { return {&run_slice, nullptr, nullptr}; }
Kernel make_kernel_pad() { return {&run_pad, nullptr, nullptr}; }
Kernel make_kernel_transpose() { return {&run_transpose, nullptr, nullptr}; }
Kernel make_kernel_reshape() { return {&run_reshape, nullptr, nullptr}; }
Kernel make_kernel_roll() { return {&run_roll, nullptr, nullptr}; }
Kernel make_kernel_upsample_nearest() { return {&run_upsample_nearest, nullptr, nullptr}; }
Kernel make_kernel_embedding() { return {&run_embedding, nullptr, nullptr}; }

}  // namespace longrun::cuda
