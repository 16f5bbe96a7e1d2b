// Glue of the cpu elementwise kernels (no intrinsics here): broadcast planning, threading
// and the reference fallbacks; the vector loops are in elementwise_{avx2,avx512}.cpp.
#include "cpu/elementwise.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cpu/cpu_isa.h"

namespace longrun::cpu {
namespace {

// Work is cut into blocks of at most this many elements (64 KB of f32), and chunks hold
// at least this many elements: large enough to amortise a task, small enough to balance.
constexpr int64_t kBlock = 16384;
// A binary op streams its output (cpu_isa.h, stream_min_bytes) only in runs this long or longer.
constexpr int64_t kStreamMinRun = 1024;

bool all_f32_contiguous(const KernelArgs& args) {
  for (const TensorView& v : args.inputs)
    if (v.desc.dtype() != DType::f32 || !v.desc.is_contiguous()) return false;
  for (const TensorView& v : args.outputs)
    if (v.desc.dtype() != DType::f32 || !v.desc.is_contiguous()) return false;
  return true;
}

Status run_binary(const KernelArgs& args, BinaryOp op, KernelFn reference, const ElementwiseIsa& isa) {
  if (!all_f32_contiguous(args)) return reference(args);
  const TensorView& a = args.inputs[0];
  const TensorView& b = args.inputs[1];
  const TensorView& y = args.outputs[0];
  if (y.desc.numel() == 0) return {};
  const TensorDesc descs[2] = {a.desc, b.desc};
  const BroadcastPlan p = plan_broadcast(descs, y.desc);
  // Units: blocks of at most kBlock elements of one inner run.
  const int64_t blk = std::min(p.inner, kBlock);
  const int64_t nblk = (p.inner + blk - 1) / blk;
  const float* pa = a.ptr<const float>();
  const float* pb = b.ptr<const float>();
  float* py = y.ptr<float>();
  // An output beyond the cache goes out with non-temporal stores (cpu_isa.h): a binary op is
  // bound by memory traffic, and streaming saves the read for ownership of every output line.
  // Not for the unary ops, which are compute-bound (gelu) and gain nothing. Not for short
  // inner runs either (each call ends with an sfence).
  const bool stream = y.desc.nbytes() >= stream_min_bytes() && p.inner >= kStreamMinRun &&
                      reinterpret_cast<uintptr_t>(py) % 4 == 0;
  parallel_ranges(args.pool, p.runs() * nblk, std::max<int64_t>(1, kBlock / blk),
                  [&](int64_t u0, int64_t u1) {
                    int64_t o = u0 / nblk, bi = u0 % nblk;
                    BroadcastCursor cur(p, o);
                    for (int64_t u = u0; u < u1; ++u) {
                      const int64_t start = bi * blk, len = std::min(blk, p.inner - start);
                      isa.binary(op, pa + cur.offset(0) + start * p.step[0], p.step[0],
                                 pb + cur.offset(1) + start * p.step[1], p.step[1], py + o * p.inner + start,
                                 len, stream);
                      if (++bi < nblk) continue;
                      bi = 0;
                      ++o;
                      cur.next();
                    }
                  });
  return {};
}

Status run_unary(const KernelArgs& args, UnaryOp op, KernelFn reference, const ElementwiseIsa& isa) {
  if (!all_f32_contiguous(args)) return reference(args);
  float p0 = 0.0f, p1 = 0.0f;
  if (op == UnaryOp::scale) {
    const ScaleAttrs& at = args.attr<ScaleAttrs>();
    p0 = at.scale, p1 = at.shift;
  }
  const float* x = args.inputs[0].ptr<const float>();
  float* y = args.outputs[0].ptr<float>();
  const int64_t n = args.outputs[0].desc.numel();
  const int64_t grain = op == UnaryOp::scale || op == UnaryOp::relu ? 4 * kBlock : kBlock;
  parallel_ranges(args.pool, n, grain,
                  [&](int64_t b, int64_t e) { isa.unary(op, x + b, y + b, e - b, p0, p1); });
  return {};
}

// ---- cast --------------------------------------------------------------------------------

template <typename T>
T load_raw(const void* p, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + i * int64_t(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void store_raw(void* p, int64_t i, T v) {
  std::memcpy(static_cast<char*>(p) + i * int64_t(sizeof(T)), &v, sizeof(T));
}

// Element i of a float tensor as f32 (exact for f32/f16/bf16).
float load_float(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::f16: return f16_to_f32(load_raw<uint16_t>(p, i));
    case DType::bf16: return bf16_to_f32(load_raw<uint16_t>(p, i));
    default: return load_raw<float>(p, i);
  }
}

int64_t load_int(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::i32: return load_raw<int32_t>(p, i);
    case DType::i64: return load_raw<int64_t>(p, i);
    default: return load_raw<uint8_t>(p, i);
  }
}

void store_float(DType t, void* p, int64_t i, float v) {
  switch (t) {
    case DType::f16: return store_raw<uint16_t>(p, i, f32_to_f16(v));
    case DType::bf16: return store_raw<uint16_t>(p, i, f32_to_bf16(v));
    default: return store_raw<float>(p, i, v);
  }
}

void store_int(DType t, void* p, int64_t i, int64_t v) {
  switch (t) {
    case DType::i32: return store_raw<int32_t>(p, i, int32_t(v));
    case DType::i64: return store_raw<int64_t>(p, i, v);
    default: return store_raw<uint8_t>(p, i, uint8_t(v));
  }
}

void int_range(DType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case DType::i32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case DType::i64: *lo = INT64_MIN, *hi = INT64_MAX; return;
    default: *lo = 0, *hi = UINT8_MAX; return;
  }
}

// Converts elements [b, e) with the reference's rules; returns false on the first value that
// does not fit (the caller then lets the reference kernel report it).
bool cast_range(DType from, const void* x, DType to, void* y, int64_t b, int64_t e,
                const ElementwiseIsa& isa) {
  const int64_t n = e - b;
  if (from == to) {
    const size_t es = dtype_size(from);
    std::memcpy(static_cast<char*>(y) + b * int64_t(es), static_cast<const char*>(x) + b * int64_t(es),
                size_t(n) * es);
    return true;
  }
  if (from == DType::f32 && to == DType::f16)
    return isa.f32_to_f16(static_cast<const float*>(x) + b, static_cast<uint16_t*>(y) + b, n), true;
  if (from == DType::f16 && to == DType::f32)
    return isa.f16_to_f32(static_cast<const uint16_t*>(x) + b, static_cast<float*>(y) + b, n), true;
  if (from == DType::f32 && to == DType::bf16)
    return isa.f32_to_bf16(static_cast<const float*>(x) + b, static_cast<uint16_t*>(y) + b, n), true;
  if (from == DType::bf16 && to == DType::f32)
    return isa.bf16_to_f32(static_cast<const uint16_t*>(x) + b, static_cast<float*>(y) + b, n), true;
  if (dtype_is_float(to)) {
    // float -> float via exact f32; int -> float rounds to f32 first (as torch).
    for (int64_t i = b; i < e; ++i)
      store_float(to, y, i, dtype_is_int(from) ? float(load_int(from, x, i)) : load_float(from, x, i));
    return true;
  }
  int64_t lo, hi;
  int_range(to, &lo, &hi);
  if (dtype_is_int(from)) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t v = load_int(from, x, i);
      if (v < lo || v > hi) return false;
      store_int(to, y, i, v);
    }
    return true;
  }
  // float -> int truncates toward zero; double(hi) + 1 is exactly 256, 2^31 or 2^63.
  for (int64_t i = b; i < e; ++i) {
    const double t = std::trunc(double(load_float(from, x, i)));
    if (!(t >= double(lo) && t < double(hi) + 1.0)) return false;  // NaN fails too
    store_int(to, y, i, int64_t(t));
  }
  return true;
}

Status run_cast(const KernelArgs& args, const ElementwiseIsa& isa) {
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  if (!x.desc.is_contiguous() || !y.desc.is_contiguous()) return reference_cast(args);
  const DType from = x.desc.dtype(), to = y.desc.dtype();
  std::atomic<bool> failed{false};
  parallel_ranges(args.pool, x.desc.numel(), 4 * kBlock, [&](int64_t b, int64_t e) {
    if (!cast_range(from, x.data, to, y.data, b, e, isa)) failed.store(true, std::memory_order_relaxed);
  });
  // A value out of range: the reference kernel finds the first one (row-major) and names it.
  if (failed.load()) return reference_cast(args);
  return {};
}

}  // namespace

int64_t BroadcastPlan::runs() const {
  int64_t n = 1;
  for (int i = 0; i < outer_rank; ++i) n *= outer_dims[i];
  return n;
}

BroadcastPlan plan_broadcast(std::span<const TensorDesc> operands, const TensorDesc& out) {
  const int r = out.rank();
  const int nops = int(operands.size());
  int64_t dims[BroadcastPlan::kMaxOperands][kMaxRank], strides[BroadcastPlan::kMaxOperands][kMaxRank];
  for (int k = 0; k < nops; ++k) {  // right-aligned dims and contiguous strides
    const TensorDesc& d = operands[size_t(k)];
    const int shift = r - d.rank();
    for (int i = 0; i < r; ++i) dims[k][i] = i < shift ? 1 : d.dim(i - shift);
    int64_t s = 1;
    for (int i = r - 1; i >= 0; --i) strides[k][i] = s, s *= dims[k][i];
  }
  enum Kind { none, full, bcast };
  Kind kind[BroadcastPlan::kMaxOperands] = {none, none, none};
  int first_inner = r;
  for (int i = r - 1; i >= 0; --i) {
    if (out.dim(i) != 1) {
      bool consistent = true;
      for (int k = 0; k < nops; ++k) {
        const Kind c = dims[k][i] == 1 ? bcast : full;
        consistent = consistent && (kind[k] == none || kind[k] == c);
      }
      if (!consistent) break;
      for (int k = 0; k < nops; ++k) kind[k] = dims[k][i] == 1 ? bcast : full;
    }
    first_inner = i;
  }
  BroadcastPlan p;
  p.operands = nops;
  for (int i = first_inner; i < r; ++i) p.inner *= out.dim(i);
  p.outer_rank = first_inner;
  for (int i = 0; i < first_inner; ++i) p.outer_dims[i] = out.dim(i);
  for (int k = 0; k < nops; ++k) {
    p.step[k] = kind[k] == bcast ? 0 : 1;
    for (int i = 0; i < first_inner; ++i) p.stride[k][i] = dims[k][i] == 1 ? 0 : strides[k][i];
  }
  return p;
}

BroadcastCursor::BroadcastCursor(const BroadcastPlan& p, int64_t o) : p_(p) {
  for (int64_t i = p.outer_rank - 1; i >= 0; --i) {
    idx_[i] = o % p.outer_dims[i];
    o /= p.outer_dims[i];
    for (int k = 0; k < p.operands; ++k) off_[k] += idx_[i] * p.stride[k][i];
  }
}

void BroadcastCursor::next() {
  for (int i = p_.outer_rank - 1; i >= 0; --i) {
    for (int k = 0; k < p_.operands; ++k) off_[k] += p_.stride[k][i];
    if (++idx_[i] < p_.outer_dims[i]) return;
    for (int k = 0; k < p_.operands; ++k) off_[k] -= idx_[i] * p_.stride[k][i];
    idx_[i] = 0;
  }
}

#define LR_ELEMENTWISE_ENTRIES(isa, table)                                \
  Status cpu_add_f32_##isa(const KernelArgs& a) {                         \
    return run_binary(a, BinaryOp::add, &reference_add, table);           \
  }                                                                       \
  Status cpu_sub_f32_##isa(const KernelArgs& a) {                         \
    return run_binary(a, BinaryOp::sub, &reference_sub, table);           \
  }                                                                       \
  Status cpu_mul_f32_##isa(const KernelArgs& a) {                         \
    return run_binary(a, BinaryOp::mul, &reference_mul, table);           \
  }                                                                       \
  Status cpu_scale_f32_##isa(const KernelArgs& a) {                       \
    return run_unary(a, UnaryOp::scale, &reference_scale, table);         \
  }                                                                       \
  Status cpu_exp_f32_##isa(const KernelArgs& a) {                         \
    return run_unary(a, UnaryOp::exp, &reference_exp, table);             \
  }                                                                       \
  Status cpu_tanh_f32_##isa(const KernelArgs& a) {                        \
    return run_unary(a, UnaryOp::tanh, &reference_tanh, table);           \
  }                                                                       \
  Status cpu_relu_f32_##isa(const KernelArgs& a) {                        \
    return run_unary(a, UnaryOp::relu, &reference_relu, table);           \
  }                                                                       \
  Status cpu_gelu_f32_##isa(const KernelArgs& a) {                        \
    return run_unary(a, UnaryOp::gelu, &reference_gelu, table);           \
  }                                                                       \
  Status cpu_gelu_tanh_f32_##isa(const KernelArgs& a) {                   \
    return run_unary(a, UnaryOp::gelu_tanh, &reference_gelu_tanh, table); \
  }                                                                       \
  Status cpu_cast_##isa(const KernelArgs& a) { return run_cast(a, table); }

LR_ELEMENTWISE_ENTRIES(avx2, kElementwiseAvx2)
LR_ELEMENTWISE_ENTRIES(avx512, kElementwiseAvx512)
#undef LR_ELEMENTWISE_ENTRIES

}  // namespace longrun::cpu
