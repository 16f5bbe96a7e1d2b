// Cuda kernels of the spectral ops dct, idct and spectral_filter (attrs.h), each one f32
// matrix product with a transform matrix T [R x U] (R outputs, U inputs used along the axis)
// built once per node by the prepare step:
//   dct:             T[k][n] = c_k(N) cos(pi k (2n+1) / 2N), k < keep          [keep x N]
//   idct:            T[j][k] = c_k(m) cos(pi k (2j+1) / 2m), k < min(len, m)   [m x used]
//   spectral_filter: T = IDCT_M DCT_N[0:M]                                     [M x N]
// (spectral_filter with M = N is the identity, a copy.) The cosines are computed in double
// on the host exactly as the reference does (phase reduced modulo one period) and rounded
// once to f32; the filter's product of two such double matrices is a cuBLAS DGEMM on the
// device at prepare (M^2 N flops are too many for the host at N = 4096), then rounded.
// At run, x viewed as [outer, L, inner] (L along the axis) gives, per outer index,
// Y_o [R x inner] = T X_o[0:U] [U x inner]: one strided-batched SGEMM with stride 0 for T;
// with the axis last (inner = 1) one plain SGEMM with the outer index as its columns.
// Plain FP32 SGEMM (no TF32): ~sqrt(U) eps error on O(1) coefficients, inside the 1e-5 bound.
// Each line costs R x U multiply-adds (O(N^2), not an FFT's O(N log N)); supports() turns
// down a matrix above kMaxMatrix elements.
#include <algorithm>
#include <climits>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "cuda/cublas_gemm.h"
#include "cuda/cuda_kernel.h"
#include "cuda/device_util.cuh"

namespace longrun::cuda {

namespace {

enum class SpectralOp { dct, idct, filter };

// The transform along one axis: `rows` outputs from the first `cols` inputs.
struct Transform {
  int axis = 0;
  int64_t rows = 0, cols = 0;
  bool identity = false;  // spectral_filter keeping everything: y = x
  bool operator==(const Transform&) const = default;
};

Transform transform_of(SpectralOp op, const OpAttrs& attrs, const TensorDesc& x) {
  Transform t;
  switch (op) {
    case SpectralOp::dct: {
      const auto& a = std::get<DctAttrs>(attrs);
      t.axis = x.normalize_axis(a.axis);
      t.cols = x.dim(t.axis);
      t.rows = a.keep == 0 ? t.cols : a.keep;
      break;
    }
    case SpectralOp::idct: {
      const auto& a = std::get<IdctAttrs>(attrs);
      t.axis = x.normalize_axis(a.axis);
      const int64_t len = x.dim(t.axis);
      t.rows = a.n == 0 ? len : a.n;
      t.cols = std::min(len, t.rows);  // truncation to n; zero padding adds nothing
      break;
    }
    case SpectralOp::filter: {
      const auto& a = std::get<SpectralFilterAttrs>(attrs);
      t.axis = x.normalize_axis(a.axis);
      t.cols = x.dim(t.axis);
      t.rows = std::min(a.keep, t.cols);
      t.identity = t.rows == t.cols;  // the orthonormal DCT-III undoes the DCT-II
      break;
    }
  }
  return t;
}

// Largest matrix held (f32 elements): 256 MiB, e.g. 8192 x 8192.
constexpr int64_t kMaxMatrix = int64_t(1) << 26;

const char* op_name_of(SpectralOp op) {
  return op == SpectralOp::dct ? "dct" : op == SpectralOp::idct ? "idct" : "spectral_filter";
}

// ---- transform matrices (host, double) ----------------------------------------------------

// cos(pi phase / 2p) for each phase of one period [0, 4p): the reference's basis() reduces
// k(2n+1) modulo 4p before dividing, so looking its value up here gives the same doubles.
class CosTable {
 public:
  explicit CosTable(int64_t p) : p_(p), v_(size_t(4 * p)) {
    for (int64_t phase = 0; phase < 4 * p; ++phase)
      v_[size_t(phase)] = std::cos(std::numbers::pi * double(phase) / double(2 * p));
  }
  // cos(pi k (2n+1) / 2p)
  double basis(int64_t k, int64_t n) const {
    const int64_t period = 4 * p_;
    return v_[size_t(((k % period) * ((2 * n + 1) % period)) % period)];
  }
  // c_k(p): the orthonormal scale.
  double scale(int64_t k) const { return k == 0 ? std::sqrt(1.0 / double(p_)) : std::sqrt(2.0 / double(p_)); }

 private:
  int64_t p_;
  std::vector<double> v_;
};

// DCT-II of length n, first `keep` coefficients: [keep x n], row-major.
std::vector<double> dct2_matrix(int64_t n, int64_t keep) {
  const CosTable c(n);
  std::vector<double> t(size_t(keep * n));
  for (int64_t k = 0; k < keep; ++k)
    for (int64_t i = 0; i < n; ++i) t[size_t(k * n + i)] = c.scale(k) * c.basis(k, i);
  return t;
}

// DCT-III of length m from the first `used` coefficients: [m x used], row-major.
std::vector<double> dct3_matrix(int64_t m, int64_t used) {
  const CosTable c(m);
  std::vector<double> t(size_t(m * used));
  for (int64_t j = 0; j < m; ++j)
    for (int64_t k = 0; k < used; ++k) t[size_t(j * used + k)] = c.scale(k) * c.basis(k, j);
  return t;
}

__global__ void narrow_kernel(const double* src, float* dst, int64_t n) {
  LR_GRID_STRIDE(i, n) dst[i] = float(src[i]);
}

constexpr int kThreads = 256;

// A device buffer holding `bytes` copied from host memory (synchronised: `src` may die).
Result<std::shared_ptr<void>> upload(const void* src, int64_t bytes, Context& ctx, const std::string& what) {
  LR_ASSIGN_OR_RETURN(auto buf, device_alloc(bytes, what));
  LR_CUDA(cudaMemcpyAsync(buf.get(), src, size_t(bytes), cudaMemcpyHostToDevice, ctx.stream));
  LR_CUDA(cudaStreamSynchronize(ctx.stream));
  return buf;
}

// The f32 device copy of a double matrix that is already on the device.
Result<std::shared_ptr<void>> narrowed(const double* src, int64_t n, Context& ctx, const std::string& what) {
  LR_ASSIGN_OR_RETURN(auto buf, device_alloc(n * 4, what));
  narrow_kernel<<<grid_for(n, kThreads, ctx.props.multiProcessorCount), kThreads, 0, ctx.stream>>>(
      src, static_cast<float*>(buf.get()), n);
  LR_CUDA_LAUNCHED("spectral narrow_kernel");
  return buf;
}

// The filter's [M x N] matrix IDCT_M DCT_N[0:M], multiplied in double on the device.
Result<std::shared_ptr<void>> filter_matrix(int64_t m, int64_t n, Context& ctx) {
  const std::vector<double> p = dct3_matrix(m, m), q = dct2_matrix(n, m);
  LR_ASSIGN_OR_RETURN(auto dp, upload(p.data(), m * m * 8, ctx, "spectral_filter DCT-III matrix"));
  LR_ASSIGN_OR_RETURN(auto dq, upload(q.data(), m * n * 8, ctx, "spectral_filter DCT-II matrix"));
  LR_ASSIGN_OR_RETURN(auto df, device_alloc(m * n * 8, "spectral_filter product (double)"));
  const double one = 1.0, zero = 0.0;
  // Row-major F = P Q is column-major F^T = Q^T P^T: Q first.
  LR_CUBLAS(ctx.blas->dgemm(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(m), &one,
                            static_cast<const double*>(dq.get()), int(n),
                            static_cast<const double*>(dp.get()), int(m), &zero,
                            static_cast<double*>(df.get()), int(n)));
  LR_ASSIGN_OR_RETURN(auto f,
                      narrowed(static_cast<const double*>(df.get()), m * n, ctx, "spectral_filter matrix"));
  LR_CUDA(cudaStreamSynchronize(ctx.stream));  // the double temporaries are freed on return
  return f;
}

// The prepared state: the transform it was built for and its f32 matrix (none for the
// identity or an empty transform).
struct SpectralState {
  Transform t;
  std::shared_ptr<void> matrix;
};

Result<std::shared_ptr<void>> prepare_transform(SpectralOp op, const Graph& graph, const Node& node,
                                                Context& ctx, int64_t* device_bytes) {
  if (device_bytes != nullptr) *device_bytes = 0;
  auto state = std::make_shared<SpectralState>();
  state->t = transform_of(op, node.attrs, graph.value(node.inputs[0]).desc);
  const Transform& t = state->t;
  if (t.identity || t.rows == 0 || t.cols == 0) return std::shared_ptr<void>(std::move(state));
  const std::string what = std::string(op_name_of(op)) + " matrix";
  if (op == SpectralOp::filter) {
    LR_ASSIGN_OR_RETURN(state->matrix, filter_matrix(t.rows, t.cols, ctx));
  } else {
    const std::vector<double> m =
        op == SpectralOp::dct ? dct2_matrix(t.cols, t.rows) : dct3_matrix(t.rows, t.cols);
    const std::vector<float> f(m.begin(), m.end());  // one rounding to f32
    LR_ASSIGN_OR_RETURN(state->matrix, upload(f.data(), t.rows * t.cols * 4, ctx, what));
  }
  if (device_bytes != nullptr) *device_bytes = t.rows * t.cols * 4;
  return std::shared_ptr<void>(std::move(state));
}

Status run_transform(SpectralOp op, const KernelArgs& args) {
  const TensorView& x = args.inputs[0];
  const TensorView& y = args.outputs[0];
  const std::string name = op_name_of(op);
  if (!x.desc.is_contiguous() || !y.desc.is_contiguous())
    return unsupported("cuda " + name + ": non-contiguous tensors " + x.desc.to_string() + " -> " +
                       y.desc.to_string());
  if (y.desc.numel() == 0) return {};
  const Transform t = transform_of(op, *args.attrs, x.desc);
  Context& ctx = *args.ctx;
  if (t.identity) {
    LR_CUDA(cudaMemcpyAsync(y.data, x.data, size_t(y.desc.nbytes()), cudaMemcpyDeviceToDevice, ctx.stream));
    return {};
  }
  if (t.cols == 0) {  // idct of an empty axis zero-padded to n
    LR_CUDA(cudaMemsetAsync(y.data, 0, size_t(y.desc.nbytes()), ctx.stream));
    return {};
  }
  const auto* state = static_cast<const SpectralState*>(args.prepared);
  if (state == nullptr || !(state->t == t) || state->matrix == nullptr)
    return internal_error("cuda " + name + ": no prepared transform matrix for " + x.desc.to_string() +
                          " (the node's prepare step did not run for this shape)");
  const auto* m = static_cast<const float*>(state->matrix.get());
  const AxisLines lines = axis_lines(x.desc, t.axis);
  const int64_t outer = lines.outer, inner = lines.inner, len = lines.n;
  const auto* xp = static_cast<const float*>(x.data);
  auto* yp = static_cast<float*>(y.data);
  if (inner == 1)  // column-major Y^T [R x outer] = T [R x U] (stored as [U x R]) X^T [U x outer] (ld L)
    return sgemm_strided_batched(ctx, CUBLAS_OP_T, CUBLAS_OP_N, t.rows, outer, t.cols, 1.0f, m, t.cols, 0, xp,
                                 len, 0, yp, t.rows, 0, 1);
  // Per outer index, column-major Y_o^T [inner x R] = X_o^T [inner x U] (ld inner) T^T [U x R].
  return sgemm_strided_batched(ctx, CUBLAS_OP_N, CUBLAS_OP_N, inner, t.rows, t.cols, 1.0f, xp, inner,
                               len * inner, m, t.cols, 0, yp, inner, t.rows * inner, outer);
}

template <SpectralOp Op>
Status run(const KernelArgs& args) {
  return run_transform(Op, args);
}

template <SpectralOp Op>
Result<std::shared_ptr<void>> prepare(const Graph& graph, const Node& node, Context& ctx,
                                      int64_t* device_bytes) {
  return prepare_transform(Op, graph, node, ctx, device_bytes);
}

template <SpectralOp Op>
bool supports(const Graph& graph, const Node& node, std::string* why) {
  const Transform t = transform_of(Op, node.attrs, graph.value(node.inputs[0]).desc);
  if (t.identity || t.rows * t.cols <= kMaxMatrix) return true;
  if (why != nullptr)
    *why = "cuda " + std::string(op_name_of(Op)) + ": a " + std::to_string(t.rows) + " x " +
           std::to_string(t.cols) +
           " transform matrix is too large for the matrix-product kernel (no FFT path yet)";
  return false;
}

template <SpectralOp Op>
Kernel spectral_kernel() {
  return {run<Op>, prepare<Op>, supports<Op>};
}

}  // namespace

Kernel make_kernel_dct() { return spectral_kernel<SpectralOp::dct>(); }
Kernel make_kernel_idct() { return spectral_kernel<SpectralOp::idct>(); }
Kernel make_kernel_spectral_filter() { return spectral_kernel<SpectralOp::filter>(); }

}  // namespace longrun::cuda
