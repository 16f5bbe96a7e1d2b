// Reference kernels of softmax and layer_norm. Both may run in place (schema
// inplace_input = 0), so each computes its whole output into a buffer before storing it.
#include <cmath>
#include <limits>
#include <vector>

#include "longrun/ops/schema.h"
#include "reference/access.h"

namespace longrun {
namespace {

// Stores `buf` (row-major over out's dims) through out's strides.
void store_all(const TensorView& out, const std::vector<double>& buf) {
  size_t n = 0;
  ref::for_each_index(out.desc.dims(), [&](std::span<const int64_t> idx) {
    ref::store(out, ref::offset_of(out.desc, idx), buf[n++]);
  });
}

}  // namespace

Status reference_softmax(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::softmax, args));
  const SoftmaxAttrs& at = args.attr<SoftmaxAttrs>();
  const TensorView& x = args.inputs[0];
  const TensorView* mask = at.has_mask ? &args.inputs[1] : nullptr;
  const TensorView& out = args.outputs[0];
  const int rank = x.desc.rank();
  const int axis = x.desc.normalize_axis(at.axis);
  const int64_t len = x.desc.dim(axis);
  // Causal: row i runs along axis -2, column j along the (last) softmax axis.
  const int64_t rows = at.causal ? x.desc.dim(rank - 2) : 0;
  const int64_t cols = x.desc.dim(rank - 1);

  const TensorDesc packed(DType::f32, x.desc.dims());  // row-major positions inside buf
  std::vector<double> buf(size_t(x.desc.numel()));
  std::vector<int64_t> line_dims(x.desc.dims().begin(), x.desc.dims().end());
  line_dims[size_t(axis)] = 1;
  std::vector<double> line(static_cast<size_t>(len));
  ref::for_each_index(line_dims, [&](std::span<const int64_t> base) {
    std::vector<int64_t> pos(base.begin(), base.end());
    for (int64_t j = 0; j < len; ++j) {
      pos[size_t(axis)] = j;
      double l = ref::load(x, ref::offset_of(x.desc, pos)) * double(at.scale);
      if (mask != nullptr) l += ref::load(*mask, ref::broadcast_offset(mask->desc, pos));
      if (at.causal && j > pos[size_t(rank - 2)] + (cols - rows))
        l = -std::numeric_limits<double>::infinity();
      line[size_t(j)] = l;
    }
    ref::softmax_in_place(line);
    for (int64_t j = 0; j < len; ++j) {
      pos[size_t(axis)] = j;
      buf[size_t(ref::offset_of(packed, pos))] = line[size_t(j)];
    }
  });
  store_all(out, buf);
  return {};
}

// y = (x - mean) / sqrt(var + eps) * gamma + beta over the last axis, biased variance,
// two passes (mean first) so that the oracle does not lose digits to cancellation.
Status reference_layer_norm(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::layer_norm, args));
  const double eps = args.attr<LayerNormAttrs>().eps;
  const TensorView& x = args.inputs[0];
  const TensorView& gamma = args.inputs[1];
  const TensorView& beta = args.inputs[2];
  const TensorView& out = args.outputs[0];
  const int axis = x.desc.rank() - 1;
  const int64_t D = x.desc.dim(axis);
  const int64_t xs = x.desc.stride(axis);

  std::vector<double> buf;
  buf.reserve(size_t(x.desc.numel()));
  std::vector<int64_t> line_dims(x.desc.dims().begin(), x.desc.dims().end());
  line_dims[size_t(axis)] = 1;
  ref::for_each_index(line_dims, [&](std::span<const int64_t> base) {
    const int64_t x0 = ref::offset_of(x.desc, base);
    double mean = 0.0;
    for (int64_t d = 0; d < D; ++d) mean += ref::load(x, x0 + d * xs);
    mean /= double(D);
    double var = 0.0;
    for (int64_t d = 0; d < D; ++d) {
      const double c = ref::load(x, x0 + d * xs) - mean;
      var += c * c;
    }
    var /= double(D);
    const double inv = 1.0 / std::sqrt(var + eps);
    // Lines are visited in row-major order with d innermost, so push_back fills buf
    // row-major, the order store_all writes it back in.
    for (int64_t d = 0; d < D; ++d) {
      const double g = ref::load(gamma, d * gamma.desc.stride(0));
      const double b = ref::load(beta, d * beta.desc.stride(0));
      buf.push_back((ref::load(x, x0 + d * xs) - mean) * inv * g + b);
    }
  });
  store_all(out, buf);
  return {};
}

}  // namespace longrun
