// Cuda kernel of matmul: Y = act(alpha * op(A) op(B) + bias + beta * C) with numpy
// broadcasting of the batch dims of A, B and C (attrs.h MatmulAttrs).
//
// The product is cuBLAS SGEMM in plain FP32: the handle is in CUBLAS_PEDANTIC_MATH
// (cuda_context.cu), so no TF32 or other tensor-op math. Row-major trick: a row-major
// Y = op(A) op(B) is the column-major Y^T = op(B)^T op(A)^T, so B is cuBLAS's first operand.
// The output's batch dims split into an inner run that every operand walks with one stride
// (0 where it broadcasts), done by one strided-batched call, and outer dims looped on the
// host, one call per outer index (e.g. A [2,1,M,K] x B [1,3,K,N]: 2 calls of 3). A shared B
// with a non-transposed A folds the run into M: one plain GEMM of run*M rows.
// cuBLAS writes alpha*AB straight into Y with beta = 0 (Y's old bytes are never read;
// matmul never runs in place, ops/schema.cpp), then one epilogue kernel (one thread per
// output element, grid-stride) adds bias and beta*C (broadcast) and applies the activation
// in double, in the reference's order, rounding once to f32.
// A f16/bf16 B is widened to f32: once at prepare when it is a graph weight (a device copy
// owned by the prepared state), else into scratch by a small kernel each run.
#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cublas_gemm.h"
#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {

Status sgemm_strided_batched(const Context& ctx, cublasOperation_t op_a, cublasOperation_t op_b, int64_t m,
                             int64_t n, int64_t k, float alpha, const float* a, int64_t lda, int64_t stride_a,
                             const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                             int64_t stride_c, int64_t batch) {
  for (int64_t v : {m, n, k, lda, ldb, ldc})
    if (v > INT_MAX)
      return unsupported("cuda sgemm: dimension " + std::to_string(v) + " exceeds cuBLAS's int range");
  constexpr int64_t kChunk = 65535;
  const float beta = 0.0f;
  for (int64_t first = 0; first < batch; first += kChunk) {
    const int64_t count = std::min(kChunk, batch - first);
    LR_CUBLAS(ctx.blas->sgemm_strided_batched(ctx.cublas, op_a, op_b, int(m), int(n), int(k), &alpha,
                                              a + first * stride_a, int(lda), stride_a, b + first * stride_b,
                                              int(ldb), stride_b, &beta, c + first * stride_c, int(ldc),
                                              stride_c, int(count)));
  }
  return {};
}

namespace {

using BatchStrides = std::array<int64_t, kMaxRank>;

// Element stride of `d`'s matrices along output batch dim `i` (of `nb`): 0 where d lacks the
// dim or has size 1 there (numpy: right-aligned, size-1 dims repeat).
int64_t batch_stride(const TensorDesc& d, int nb, int i) {
  const int j = i - (nb - (d.rank() - 2));
  return j < 0 || d.dim(j) == 1 ? 0 : d.stride(j);
}

BatchStrides batch_strides(const TensorDesc& d, int nb) {
  BatchStrides s{};
  for (int i = 0; i < nb; ++i) s[size_t(i)] = batch_stride(d, nb, i);
  return s;
}

// Maps an output batch index (row-major over the output's batch dims) to the element offset
// of a broadcast operand's matrix.
struct BatchMap {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};

  __device__ int64_t offset(int64_t b) const {
    int64_t o = 0;
    for (int d = rank - 1; d >= 0; --d) {
      o += (b % dims[d]) * strides[d];
      b /= dims[d];
    }
    return o;
  }
};

__device__ double activate(Activation act, double x) {
  switch (act) {
    case Activation::none: return x;
    case Activation::relu: return isnan(x) ? x : (x > 0.0 ? x : 0.0);  // NaN propagates (ref::relu)
    case Activation::gelu: return x * 0.5 * (1.0 + erf(x / 1.4142135623730951));
    case Activation::gelu_tanh: {
      const double c = 0.7978845608028654;  // sqrt(2 / pi)
      return 0.5 * x * (1.0 + tanh(c * (x + 0.044715 * x * x * x)));
    }
  }
  return x;
}

// What the epilogue adds to alpha*AB (already in Y); null pointers: absent terms.
struct Epilogue {
  const float* bias = nullptr;
  const float* c = nullptr;
  BatchMap c_map;  // C's matrix for an output batch index
  double beta = 0.0;
  Activation act = Activation::none;
  int64_t mn = 1, n = 1;
};

__global__ void epilogue_kernel(float* y, int64_t total, Epilogue e) {
  LR_GRID_STRIDE(i, total) {
    double v = y[i];
    if (e.bias != nullptr) v += double(e.bias[i % e.n]);
    if (e.c != nullptr) v += e.beta * double(e.c[e.c_map.offset(i / e.mn) + i % e.mn]);
    y[i] = float(activate(e.act, v));
  }
}

__global__ void widen_kernel(const void* src, DType t, float* dst, int64_t n) {
  LR_GRID_STRIDE(i, n) dst[i] = load_as_float(src, t, i);
}

constexpr int kThreads = 256;

// The prepared state: B widened to f32 on the device (a f16/bf16 weight), else none.
struct MatmulState {
  std::shared_ptr<void> b_f32;
  int64_t numel = 0;
};

struct Dims {
  int64_t m, n, k;
};

Dims dims_of(const MatmulAttrs& at, const TensorDesc& a, const TensorDesc& b) {
  const int ra = a.rank(), rb = b.rank();
  return {at.trans_a ? a.dim(ra - 1) : a.dim(ra - 2), at.trans_b ? b.dim(rb - 2) : b.dim(rb - 1),
          at.trans_a ? a.dim(ra - 2) : a.dim(ra - 1)};
}

// How the output's batch dims are walked: dims [split, nb) form the run (one strided-batched
// call, operand x at offset r * run_stride[x] for run index r), dims [0, split) are looped.
enum Operand { kA = 0, kB = 1, kY = 2 };
struct BatchPlan {
  int split = 0;
  int64_t run = 1;
  int64_t run_stride[3] = {0, 0, 0};
};

BatchPlan plan_batches(std::span<const int64_t> dims, const std::array<BatchStrides, 3>& eff) {
  BatchPlan p;
  p.split = int(dims.size());
  for (int d = int(dims.size()) - 1; d >= 0; --d) {
    const size_t i = size_t(d);
    if (dims[i] == 1) {  // index always 0: joins any run
      p.split = d;
      continue;
    }
    if (p.run == 1) {  // the innermost dim that is not 1 sets the strides
      for (int x = 0; x < 3; ++x) p.run_stride[x] = eff[size_t(x)][i];
    } else {
      bool uniform = true;
      for (int x = 0; x < 3; ++x) uniform = uniform && eff[size_t(x)][i] == p.run_stride[x] * p.run;
      if (!uniform) break;
    }
    p.run *= dims[i];
    p.split = d;
  }
  return p;
}

// B as f32 on the device: the tensor itself, the prepared widened copy, or a widened copy
// in scratch.
Result<const float*> b_as_f32(const KernelArgs& args) {
  const TensorView& b = args.inputs[1];
  if (b.desc.dtype() == DType::f32) return static_cast<const float*>(b.data);
  const auto* state = static_cast<const MatmulState*>(args.prepared);
  if (state != nullptr && state->b_f32 != nullptr && state->numel == b.desc.numel())
    return static_cast<const float*>(state->b_f32.get());
  const int64_t n = b.desc.numel();
  // A quantized weight is read only through its f32 copy (matmul_prepare): widening would drop the scales.
  if (b.desc.dtype() == DType::i8)
    return invalid_argument("cuda matmul: a quantized (i8) B that was not dequantized at prepare");
  LR_ASSIGN_OR_RETURN(void* buf, args.ctx->scratch(std::max<int64_t>(n, 1) * 4));
  widen_kernel<<<grid_for(n, kThreads, args.ctx->props.multiProcessorCount), kThreads, 0, args.ctx->stream>>>(
      b.data, b.desc.dtype(), static_cast<float*>(buf), n);
  LR_CUDA_LAUNCHED("matmul widen_kernel");
  return static_cast<const float*>(buf);
}

// Y = alpha * op(A) op(B) for every output batch index.
Status product(const KernelArgs& args, const float* b32, Dims d) {
  const MatmulAttrs& at = args.attr<MatmulAttrs>();
  const TensorView& a = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const int nb = y.desc.rank() - 2;
  const std::span<const int64_t> batch = y.desc.dims().first(size_t(nb));
  BatchStrides y_strides{};
  for (int i = 0; i < nb; ++i) y_strides[size_t(i)] = y.desc.stride(i);
  const std::array<BatchStrides, 3> eff{batch_strides(a.desc, nb), batch_strides(args.inputs[1].desc, nb),
                                        y_strides};
  const BatchPlan p = plan_batches(batch, eff);

  // A shared B with stacked row-major A matrices: the run is one GEMM of run*M rows.
  const bool fold = !at.trans_a && p.run > 1 && p.run_stride[kB] == 0 && p.run_stride[kA] == d.m * d.k &&
                    p.run_stride[kY] == d.m * d.n && p.run * d.m <= INT_MAX;
  const int64_t rows = fold ? p.run * d.m : d.m;
  const int64_t count = fold ? 1 : p.run;
  const cublasOperation_t op_b = at.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = at.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t ldb = at.trans_b ? d.k : d.n;
  const int64_t lda = at.trans_a ? d.m : d.k;

  int64_t outer = 1;
  for (int i = 0; i < p.split; ++i) outer *= batch[size_t(i)];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off[3] = {0, 0, 0};
    int64_t rest = o;
    for (int i = p.split - 1; i >= 0; --i) {
      const int64_t idx = rest % batch[size_t(i)];
      rest /= batch[size_t(i)];
      for (int x = 0; x < 3; ++x) off[x] += idx * eff[size_t(x)][size_t(i)];
    }
    LR_RETURN_IF_ERROR(sgemm_strided_batched(
        *args.ctx, op_b, op_a, d.n, rows, d.k, at.alpha, b32 + off[kB], ldb, p.run_stride[kB],
        static_cast<const float*>(a.data) + off[kA], lda, p.run_stride[kA],
        static_cast<float*>(y.data) + off[kY], d.n, p.run_stride[kY], count));
  }
  return {};
}

// bias + beta*C + activation over Y in place; nothing when the epilogue is the identity.
Status epilogue(const KernelArgs& args, Dims d) {
  const MatmulAttrs& at = args.attr<MatmulAttrs>();
  if (!at.has_bias && !at.has_c && at.activation == Activation::none) return {};
  const TensorView& y = args.outputs[0];
  Epilogue e;
  e.act = at.activation;
  e.mn = d.m * d.n;
  e.n = d.n;
  if (at.has_bias) e.bias = static_cast<const float*>(args.inputs[2].data);
  if (at.has_c) {
    const TensorView& c = args.inputs[at.has_bias ? 3 : 2];
    e.c = static_cast<const float*>(c.data);
    e.beta = double(at.beta);
    e.c_map.rank = y.desc.rank() - 2;
    for (int i = 0; i < e.c_map.rank; ++i) {
      e.c_map.dims[i] = y.desc.dim(i);
      e.c_map.strides[i] = batch_stride(c.desc, e.c_map.rank, i);
    }
  }
  const int64_t total = y.desc.numel();
  epilogue_kernel<<<grid_for(total, kThreads, args.ctx->props.multiProcessorCount), kThreads, 0,
                    args.ctx->stream>>>(static_cast<float*>(y.data), total, e);
  LR_CUDA_LAUNCHED("matmul epilogue_kernel");
  return {};
}

Status matmul_run(const KernelArgs& args) {
  for (const TensorView& v : args.inputs)
    if (!v.desc.is_contiguous())
      return unsupported("cuda matmul: non-contiguous input " + v.desc.to_string());
  const TensorView& y = args.outputs[0];
  if (!y.desc.is_contiguous()) return unsupported("cuda matmul: non-contiguous output " + y.desc.to_string());
  if (y.desc.numel() == 0) return {};
  const Dims d = dims_of(args.attr<MatmulAttrs>(), args.inputs[0].desc, args.inputs[1].desc);
  if (d.k == 0) {
    // An empty dot product is 0 (and cuBLAS rejects the zero leading dimensions of K = 0).
    LR_CUDA(cudaMemsetAsync(y.data, 0, size_t(y.desc.nbytes()), args.ctx->stream));
  } else {
    LR_ASSIGN_OR_RETURN(const float* b32, b_as_f32(args));
    LR_RETURN_IF_ERROR(product(args, b32, d));
  }
  return epilogue(args, d);
}

// A f16/bf16 weight B: widened on the host once and uploaded; the run reads the copy. A
// quantized weight (i8 with scales, graph.h) is dequantized on the host (q · scale) the same way.
Result<std::shared_ptr<void>> matmul_prepare(const Graph& graph, const Node& node, Context& ctx,
                                             int64_t* device_bytes) {
  if (device_bytes != nullptr) *device_bytes = 0;
  const Value& b = graph.value(node.inputs[1]);
  const DType t = b.desc.dtype();
  const int64_t n = b.desc.numel();
  if (b.role != ValueRole::weight || t == DType::f32 || b.weight_data == nullptr || n == 0)
    return std::shared_ptr<void>();
  if (!b.desc.is_contiguous()) return unsupported("cuda matmul: non-contiguous weight " + b.desc.to_string());
  std::vector<float> host(size_t(n), 0.0f);
  if (t == DType::i8) {
    dequantize_weight(b, host.data());
  } else {
    const auto* bytes = static_cast<const unsigned char*>(b.weight_data);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);  // mapped weights need not be 2-byte aligned
      host[size_t(i)] = t == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  }
  auto state = std::make_shared<MatmulState>();
  LR_ASSIGN_OR_RETURN(state->b_f32, device_alloc(n * 4, "matmul " + b.name + " widened to f32"));
  state->numel = n;
  LR_CUDA(
      cudaMemcpyAsync(state->b_f32.get(), host.data(), size_t(n) * 4, cudaMemcpyHostToDevice, ctx.stream));
  LR_CUDA(cudaStreamSynchronize(ctx.stream));  // `host` dies on return
  if (device_bytes != nullptr) *device_bytes = n * 4;
  return std::shared_ptr<void>(std::move(state));
}

bool matmul_supports(const Graph& graph, const Node& node, std::string* why) {
  const Dims d = dims_of(std::get<MatmulAttrs>(node.attrs), graph.value(node.inputs[0]).desc,
                         graph.value(node.inputs[1]).desc);
  if (d.m <= INT_MAX && d.n <= INT_MAX && d.k <= INT_MAX) return true;
  if (why != nullptr) *why = "cuda matmul: M, N or K beyond cuBLAS's int range";
  return false;
}

}  // namespace

Kernel make_kernel_matmul() { return {matmul_run, matmul_prepare, matmul_supports}; }

}  // namespace longrun::cuda
