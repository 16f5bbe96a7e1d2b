// The cuda elementwise kernels: add, sub, mul (numpy broadcasting), the unary f32 ops
// (scale, exp, tanh, relu, gelu, gelu_tanh), cast (every dtype pair, with the reference's
// data errors) and where (a broadcast bit copy of any dtype).
//
// Parallelisation: one thread per output element in a grid-stride loop. Broadcast operands
// find their element through Broadcast<N>, which maps the output's flat index to each
// operand's offset over the output dims after merging the dims every operand walks
// contiguously (so same-shape operands cost no division at all).
//
// Precision: add/sub/mul/relu are single f32 operations (the reference's double result
// rounded to f32 is the same value), so they are bit-exact. scale, exp, tanh, gelu and
// gelu_tanh evaluate the reference's double formula in double and round once to f32.
// In place: the output may alias input 0 (schema inplace_input = 0). A thread reads its
// operands before writing its own element, and input 0 is read at other positions only when
// it is smaller than the output, in which case it cannot be the output's buffer.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(const KernelArgs& a, int64_t n) {
  return grid_for(n, kThreads, a.ctx->props.multiProcessorCount);
}

// ---- broadcasting ------------------------------------------------------------------------

// Output flat index -> element offset in each of N operands (numpy broadcasting: operands
// right-aligned, their dims of 1 repeat with stride 0).
template <int N>
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};

  __device__ void offsets(int64_t i, int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = rank - 1; d > 0; --d) {
      const int64_t q = i / dims[d], r = i - q * dims[d];
      for (int k = 0; k < N; ++k) off[k] += r * strides[k][d];
      i = q;
    }
    // The outermost index needs no division: i < dims[0] once the inner dims are removed.
    if (rank > 0)
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][0];
  }
};

// Plans the index mapping for `out`. Output dims of 1 are dropped; a dim merges into the
// one outside it when every operand steps through both as one run (outer stride == inner
// stride * inner length, which also holds for two broadcast dims: 0 == 0 * len).
template <int N>
Broadcast<N> plan_broadcast(const TensorDesc& out, const TensorDesc* const (&ops)[N]) {
  Broadcast<N> b;
  for (int d = 0; d < out.rank(); ++d) {
    const int64_t len = out.dim(d);
    if (len == 1) continue;
    int64_t s[N];
    for (int k = 0; k < N; ++k) {
      const int od = d - (out.rank() - ops[k]->rank());
      s[k] = od >= 0 && ops[k]->dim(od) != 1 ? ops[k]->stride(od) : 0;
    }
    bool merge = b.rank > 0;
    for (int k = 0; k < N && merge; ++k) merge = b.strides[k][b.rank - 1] == s[k] * len;
    if (merge) {
      b.dims[b.rank - 1] *= len;
    } else {
      b.dims[b.rank] = len;
      ++b.rank;
    }
    for (int k = 0; k < N; ++k) b.strides[k][b.rank - 1] = s[k];
  }
  return b;
}

// ---- add, sub, mul -----------------------------------------------------------------------

// The _rn intrinsics keep each operation a single IEEE rounding (no contraction).
struct AddOp {
  static constexpr const char* kName = "add";
  __device__ float operator()(float x, float y) const { return __fadd_rn(x, y); }
};
struct SubOp {
  static constexpr const char* kName = "sub";
  __device__ float operator()(float x, float y) const { return __fsub_rn(x, y); }
};
struct MulOp {
  static constexpr const char* kName = "mul";
  __device__ float operator()(float x, float y) const { return __fmul_rn(x, y); }
};

template <typename Op>
__global__ void binary_kernel(Op op, Broadcast<2> b, const float* x, const float* y, float* out, int64_t n) {
  LR_GRID_STRIDE(i, n) {
    int64_t o[2];
    b.offsets(i, o);
    out[i] = op(x[o[0]], y[o[1]]);
  }
}

template <typename Op>
Status run_binary(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, Op::kName));
  const TensorView& out = a.outputs[0];
  const int64_t n = out.desc.numel();
  if (n == 0) return {};
  const TensorDesc* const ops[2] = {&a.inputs[0].desc, &a.inputs[1].desc};
  binary_kernel<<<blocks_for(a, n), kThreads, 0, a.ctx->stream>>>(
      Op{}, plan_broadcast(out.desc, ops), a.inputs[0].ptr<const float>(), a.inputs[1].ptr<const float>(),
      out.ptr<float>(), n);
  LR_CUDA_LAUNCHED(Op::kName);
  return {};
}

// ---- unary f32 ops -----------------------------------------------------------------------

// x * scale + shift. x * scale is exact in double (24 + 24 significant bits), so one fma
// rounds exactly as the reference's double x * s + b does; then one rounding to f32.
struct ScaleOp {
  static constexpr const char* kName = "scale";
  double s, b;
  static ScaleOp from(const KernelArgs& a) {
    const ScaleAttrs& at = a.attr<ScaleAttrs>();
    return {at.scale, at.shift};
  }
  __device__ float operator()(float x) const { return float(__fma_rn(double(x), s, b)); }
};
struct ExpOp {
  static constexpr const char* kName = "exp";
  static ExpOp from(const KernelArgs&) { return {}; }
  __device__ float operator()(float x) const { return float(exp(double(x))); }
};
struct TanhOp {
  static constexpr const char* kName = "tanh";
  static TanhOp from(const KernelArgs&) { return {}; }
  __device__ float operator()(float x) const { return float(tanh(double(x))); }
};
// NaN propagates (torch); -0 and negatives give +0.
struct ReluOp {
  static constexpr const char* kName = "relu";
  static ReluOp from(const KernelArgs&) { return {}; }
  __device__ float operator()(float x) const { return x > 0.0f || isnan(x) ? x : 0.0f; }
};
// x * 0.5 * (1 + erf(x / sqrt(2))), the reference's expression in double (the constants
// come from the host so that they are the reference's own).
struct GeluOp {
  static constexpr const char* kName = "gelu";
  double sqrt2;
  static GeluOp from(const KernelArgs&) { return {std::numbers::sqrt2}; }
  __device__ float operator()(float x) const {
    const double d = x;
    return float(d * 0.5 * (1.0 + erf(d / sqrt2)));
  }
};
// 0.5 x (1 + tanh(c (x + 0.044715 x^3))), c = sqrt(2 / pi) computed on the host as in the
// reference.
struct GeluTanhOp {
  static constexpr const char* kName = "gelu_tanh";
  double c;
  static GeluTanhOp from(const KernelArgs&) { return {std::sqrt(2.0 / std::numbers::pi)}; }
  __device__ float operator()(float x) const {
    const double d = x;
    return float(0.5 * d * (1.0 + tanh(c * (d + 0.044715 * d * d * d))));
  }
};

template <typename Op>
__global__ void unary_kernel(Op op, const float* x, float* y, int64_t n) {
  LR_GRID_STRIDE(i, n) y[i] = op(x[i]);
}

template <typename Op>
Status run_unary(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, Op::kName));
  const int64_t n = a.outputs[0].desc.numel();
  if (n == 0) return {};
  unary_kernel<<<blocks_for(a, n), kThreads, 0, a.ctx->stream>>>(Op::from(a), a.inputs[0].ptr<const float>(),
                                                                 a.outputs[0].ptr<float>(), n);
  LR_CUDA_LAUNCHED(Op::kName);
  return {};
}

// ---- cast --------------------------------------------------------------------------------

enum class CastKind : int { to_float, int_to_int, float_to_int };

// Everything a cast element needs, decided on the host. lo/hi: the integer target's range;
// lo_f/end_f: the same as doubles for float sources, end_f = double(hi) + 1 (exactly 256,
// 2^31 or 2^63, as the reference computes it) so that the bound test is exact.
struct CastParams {
  const void* x;
  void* y;
  DType from, to;
  CastKind kind;
  long long lo, hi;
  double lo_f, end_f;
};

__device__ void store_int(void* p, DType t, int64_t i, long long v) {
  switch (t) {
    case DType::i32: static_cast<int32_t*>(p)[i] = int32_t(v); return;
    case DType::i64: static_cast<long long*>(p)[i] = v; return;
    case DType::u8: static_cast<uint8_t*>(p)[i] = uint8_t(v); return;
    case DType::i8: static_cast<int8_t*>(p)[i] = int8_t(v); return;
    default: return;
  }
}

// The DeviceErrorCode element i hits (kNoError when it converts), by the reference's rules:
// int -> int out of the target range, float NaN -> int, trunc(float) out of range.
__device__ int cast_error(const CastParams& c, int64_t i) {
  switch (c.kind) {
    case CastKind::to_float: return kNoError;
    case CastKind::int_to_int: {
      const long long v = load_as_int(c.x, c.from, i);
      return v < c.lo || v > c.hi ? kOutOfRange : kNoError;
    }
    case CastKind::float_to_int: {
      const double v = load_as_float(c.x, c.from, i);  // f32/f16/bf16: exact
      if (isnan(v)) return kNaN;
      const double t = trunc(v);
      return t >= c.lo_f && t < c.end_f ? kNoError : kOutOfRange;
    }
  }
  return kNoError;
}

// Converts element i, which cast_error accepted. Integers go to float through one f32
// rounding (then f16/bf16 round from that f32, as the reference and torch do).
__device__ void cast_store(const CastParams& c, int64_t i) {
  switch (c.kind) {
    case CastKind::to_float: {
      const bool from_int = c.from == DType::i32 || c.from == DType::i64 || c.from == DType::u8;
      const float v = from_int ? float(load_as_int(c.x, c.from, i)) : load_as_float(c.x, c.from, i);
      store_float(c.y, c.to, i, v);
      return;
    }
    case CastKind::int_to_int: store_int(c.y, c.to, i, load_as_int(c.x, c.from, i)); return;
    case CastKind::float_to_int:
      store_int(c.y, c.to, i, (long long)trunc(double(load_as_float(c.x, c.from, i))));
      return;
  }
}

// Converts every element; a bad one is left unwritten and its index min-reduced into
// *first (integer atomicMin: the result does not depend on the order), so the error names
// the first bad element in row-major order, as the reference's does.
__global__ void cast_kernel(CastParams c, int64_t n, unsigned long long* first) {
  LR_GRID_STRIDE(i, n) {
    if (cast_error(c, i) == kNoError)
      cast_store(c, i);
    else
      atomicMin(first, (unsigned long long)i);
  }
}

// One thread: records the first bad element. Integer sources store the int64 value's bits
// in DeviceError::value (a double would round values above 2^53); the host knows which.
__global__ void report_cast_error(CastParams c, const unsigned long long* first, DeviceError* err) {
  const unsigned long long i = *first;
  if (i == ~0ull) return;
  const bool from_int = c.kind == CastKind::int_to_int;
  const double value = from_int ? __longlong_as_double(load_as_int(c.x, c.from, int64_t(i)))
                                : double(load_as_float(c.x, c.from, int64_t(i)));
  report_error(err, cast_error(c, int64_t(i)), 0, (long long)i, value);
}

// The reference's message for the error `e` found in `x`.
Status cast_status(const TensorView& x, DType to, const DeviceError& e) {
  const std::string prefix =
      "cast: input 0 (" + x.desc.to_string() + ") element " + flat_index_string(x.desc, e.index) + ": ";
  const std::string target(dtype_name(to));
  if (e.code == kNaN) return invalid_argument(prefix + "NaN cannot be cast to " + target);
  std::string value;
  if (dtype_is_int(x.desc.dtype())) {
    long long v;
    std::memcpy(&v, &e.value, sizeof v);
    value = std::to_string(v);
  } else {
    value = std::to_string(e.value);
  }
  return out_of_range(prefix + "value " + value + " out of range for " + target);
}

void int_range(DType t, long long* lo, long long* hi) {
  switch (t) {
    case DType::i32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case DType::i64: *lo = INT64_MIN, *hi = INT64_MAX; return;
    default: *lo = 0, *hi = UINT8_MAX; return;  // u8
  }
}

Status run_cast(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "cast"));
  const TensorView& x = a.inputs[0];
  const TensorView& y = a.outputs[0];
  const int64_t n = x.desc.numel();
  if (n == 0) return {};
  const DType from = x.desc.dtype(), to = y.desc.dtype();
  cudaStream_t stream = a.ctx->stream;
  // Same dtype: every value converts to itself (a NaN stays a NaN), so a bit copy.
  if (from == to) {
    if (y.data != x.data)
      LR_CUDA(cudaMemcpyAsync(y.data, x.data, size_t(x.desc.nbytes()), cudaMemcpyDeviceToDevice, stream));
    return {};
  }
  CastParams c{x.data, y.data, from, to, CastKind::to_float, 0, 0, 0.0, 0.0};
  if (dtype_is_int(to)) {
    c.kind = dtype_is_int(from) ? CastKind::int_to_int : CastKind::float_to_int;
    int_range(to, &c.lo, &c.hi);
    c.lo_f = double(c.lo);
    c.end_f = double(c.hi) + 1.0;
  }
  const unsigned blocks = blocks_for(a, n);
  if (c.kind == CastKind::to_float) {  // cannot fail
    cast_kernel<<<blocks, kThreads, 0, stream>>>(c, n, nullptr);
    LR_CUDA_LAUNCHED("cast_kernel");
    return {};
  }
  LR_ASSIGN_OR_RETURN(void* scratch, a.ctx->scratch(int64_t(sizeof(unsigned long long))));
  auto* first = static_cast<unsigned long long*>(scratch);
  LR_CUDA(cudaMemsetAsync(first, 0xff, sizeof(unsigned long long), stream));
  LR_RETURN_IF_ERROR(a.ctx->reset_error());
  cast_kernel<<<blocks, kThreads, 0, stream>>>(c, n, first);
  LR_CUDA_LAUNCHED("cast_kernel");
  report_cast_error<<<1, 1, 0, stream>>>(c, first, a.ctx->device_error());
  LR_CUDA_LAUNCHED("report_cast_error");
  LR_ASSIGN_OR_RETURN(const DeviceError e, a.ctx->take_error());
  if (e.code == kNoError) return {};
  return cast_status(x, to, e);
}

// ---- where -------------------------------------------------------------------------------

template <typename T>
__global__ void where_kernel(Broadcast<3> b, const uint8_t* cond, const T* x, const T* y, T* out, int64_t n) {
  LR_GRID_STRIDE(i, n) {
    int64_t o[3];
    b.offsets(i, o);
    out[i] = cond[o[0]] != 0 ? x[o[1]] : y[o[2]];
  }
}

Status run_where(const KernelArgs& a) {
  LR_RETURN_IF_ERROR(check_contiguous(a, "where"));
  const TensorView& out = a.outputs[0];
  const int64_t n = out.desc.numel();
  if (n == 0) return {};
  const TensorDesc* const ops[3] = {&a.inputs[0].desc, &a.inputs[1].desc, &a.inputs[2].desc};
  const Broadcast<3> b = plan_broadcast(out.desc, ops);
  return for_element_size(dtype_size(out.desc.dtype()), [&](auto tag) -> Status {
    using T = decltype(tag);
    where_kernel<T><<<blocks_for(a, n), kThreads, 0, a.ctx->stream>>>(
        b, a.inputs[0].ptr<const uint8_t>(), a.inputs[1].ptr<const T>(), a.inputs[2].ptr<const T>(),
        out.ptr<T>(), n);
    LR_CUDA_LAUNCHED("where_kernel");
    return {};
  });
}

}  // namespace

Kernel make_kernel_add() { return {&run_binary<AddOp>, nullptr, nullptr}; }
Kernel make_kernel_sub() { return {&run_binary<SubOp>, nullptr, nullptr}; }
Kernel make_kernel_mul() { return {&run_binary<MulOp>, nullptr, nullptr}; }
Kernel make_kernel_scale() { return {&run_unary<ScaleOp>, nullptr, nullptr}; }
Kernel make_kernel_exp() { return {&run_unary<ExpOp>, nullptr, nullptr}; }
Kernel make_kernel_tanh() { return {&run_unary<TanhOp>, nullptr, nullptr}; }
Kernel make_kernel_relu() { return {&run_unary<ReluOp>, nullptr, nullptr}; }
Kernel make_kernel_gelu() { return {&run_unary<GeluOp>, nullptr, nullptr}; }
Kernel make_kernel_gelu_tanh() { return {&run_unary<GeluTanhOp>, nullptr, nullptr}; }
Kernel make_kernel_cast() { return {&run_cast, nullptr, nullptr}; }
Kernel make_kernel_where() { return {&run_where, nullptr, nullptr}; }

}  // namespace longrun::cuda
