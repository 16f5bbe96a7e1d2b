// The cpu backend's elementwise kernels: add, sub, mul (numpy broadcasting), scale, exp,
// tanh, relu, gelu, gelu_tanh and cast, for the avx2 and avx512 levels.
//
// Split in two, as every cpu kernel family here: the ISA files (elementwise_avx2.cpp,
// elementwise_avx512.cpp) export only contiguous row primitives through a table of plain
// function pointers (first half of this header, which is all they include: they define
// LONGRUN_CPU_ISA_FILE so that no library header gets compiled with AVX flags), and
// elementwise.cpp holds the generic glue (broadcast planning, threading, fallbacks to the
// reference kernels for strided views) and the KernelFn entry points named in kernels.inc.
#pragma once

#include <cstdint>

namespace longrun::cpu {

enum class BinaryOp : uint8_t { add, sub, mul };
enum class UnaryOp : uint8_t { scale, exp, tanh, relu, gelu, gelu_tanh };

// Contiguous row primitives of one ISA level. Results never depend on where a row starts
// (tails run the same vector code under a mask), so any split of the work gives the same
// bits.
struct ElementwiseIsa {
  // y[i] = a[i * sa] op b[i * sb], i < n; sa and sb are 1 (vector) or 0 (broadcast scalar).
  // y may alias a or b element for element. `stream`: the vectors of y from its first
  // vector-aligned element on are written with non-temporal stores, then an sfence.
  void (*binary)(BinaryOp op, const float* a, int sa, const float* b, int sb, float* y, int64_t n,
                 bool stream);
  // y[i] = f(x[i]) (y may alias x); scale is x * p0 + p1 (one FMA).
  void (*unary)(UnaryOp op, const float* x, float* y, int64_t n, float p0, float p1);
  // Conversions with the rounding rules of dtype.h (nearest even, NaN stays NaN).
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_bf16)(const float* x, uint16_t* y, int64_t n);
  void (*bf16_to_f32)(const uint16_t* x, float* y, int64_t n);
};
extern const ElementwiseIsa kElementwiseAvx2;
extern const ElementwiseIsa kElementwiseAvx512;

}  // namespace longrun::cpu

#ifndef LONGRUN_CPU_ISA_FILE
#include <functional>  // ThreadPool::parallel_for takes a std::function
#include <span>

#include "longrun/ops/schema.h"

namespace longrun::cpu {

// Numpy broadcasting as "outer loops x one contiguous inner run": the longest suffix of the
// output dims over which every operand is either fully present (contiguous: step 1) or
// entirely broadcast (step 0) becomes the inner run; the remaining leading dims are walked
// with per-operand element strides (0 where the operand has extent 1). Same shapes give
// one run; a row vector [D] over [.., D] runs of D with the vector re-read each time; a
// column [.., 1] runs with a broadcast scalar; any pattern numpy allows works (with short
// runs when the innermost dims broadcast differently). Operands must be contiguous.
struct BroadcastPlan {
  static constexpr int kMaxOperands = 3;
  int operands = 0;
  int outer_rank = 0;
  int64_t outer_dims[kMaxRank] = {};
  int64_t stride[kMaxOperands][kMaxRank] = {};
  int64_t inner = 1;
  int step[kMaxOperands] = {};
  int64_t runs() const;  // product of outer_dims
};
BroadcastPlan plan_broadcast(std::span<const TensorDesc> operands, const TensorDesc& out);

// Element offsets of each operand at the start of outer run `o`, advanced run by run.
class BroadcastCursor {
 public:
  BroadcastCursor(const BroadcastPlan& p, int64_t o);
  int64_t offset(int i) const { return off_[i]; }
  void next();

 private:
  const BroadcastPlan& p_;
  int64_t idx_[kMaxRank] = {};
  int64_t off_[BroadcastPlan::kMaxOperands] = {};
};

// Runs fn(begin, end) over [0, n) in the pool's deterministic chunks of about `grain` items
// or more; serially (one call) without a pool, with one thread or when n <= grain. Shared
// by the glue of every kernel family in this folder whose results do not depend on the split.
// The std::function the pool takes wraps a one-pointer lambda, which libstdc++ stores inline:
// no allocation per call.
template <typename Fn>
void parallel_ranges(ThreadPool* pool, int64_t n, int64_t grain, const Fn& fn) {
  if (n <= 0) return;
  if (pool == nullptr || pool->num_threads() <= 1 || n <= grain) {
    fn(int64_t{0}, n);
    return;
  }
  const Fn* f = &fn;
  pool->parallel_for(n, grain, [f](int64_t b, int64_t e) { (*f)(b, e); });
}

Status cpu_add_f32_avx2(const KernelArgs& args);
Status cpu_sub_f32_avx2(const KernelArgs& args);
Status cpu_mul_f32_avx2(const KernelArgs& args);
Status cpu_scale_f32_avx2(const KernelArgs& args);
Status cpu_exp_f32_avx2(const KernelArgs& args);
Status cpu_tanh_f32_avx2(const KernelArgs& args);
Status cpu_relu_f32_avx2(const KernelArgs& args);
Status cpu_gelu_f32_avx2(const KernelArgs& args);
Status cpu_gelu_tanh_f32_avx2(const KernelArgs& args);
Status cpu_cast_avx2(const KernelArgs& args);

Status cpu_add_f32_avx512(const KernelArgs& args);
Status cpu_sub_f32_avx512(const KernelArgs& args);
Status cpu_mul_f32_avx512(const KernelArgs& args);
Status cpu_scale_f32_avx512(const KernelArgs& args);
Status cpu_exp_f32_avx512(const KernelArgs& args);
Status cpu_tanh_f32_avx512(const KernelArgs& args);
Status cpu_relu_f32_avx512(const KernelArgs& args);
Status cpu_gelu_f32_avx512(const KernelArgs& args);
Status cpu_gelu_tanh_f32_avx512(const KernelArgs& args);
Status cpu_cast_avx512(const KernelArgs& args);

}  // namespace longrun::cpu
#endif  // LONGRUN_CPU_ISA_FILE
