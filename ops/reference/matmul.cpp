// Reference kernel of matmul: Y = act(alpha * op(A) op(B) + bias + beta * C), batched with
// numpy broadcasting of the batch dims. One dot product per output element, in double.
#include <vector>

#include "longrun/ops/schema.h"
#include "reference/access.h"

namespace longrun {
namespace {

// Offset of the matrix that output batch index `out_idx` reads from `d` (rank >= 2): the
// batch dims broadcast, the two matrix dims are taken at 0 (callers add row/col strides).
int64_t matrix_base(const TensorDesc& d, std::span<const int64_t> out_idx) {
  std::vector<int64_t> idx(out_idx.begin(), out_idx.end());
  idx[idx.size() - 1] = 0;
  idx[idx.size() - 2] = 0;
  return ref::broadcast_offset(d, idx);
}

}  // namespace

Status reference_matmul(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::matmul, args));
  const MatmulAttrs& at = args.attr<MatmulAttrs>();
  const TensorView& A = args.inputs[0];
  const TensorView& B = args.inputs[1];
  const TensorView* bias = at.has_bias ? &args.inputs[2] : nullptr;
  const TensorView* C = at.has_c ? &args.inputs[at.has_bias ? 3 : 2] : nullptr;
  const TensorView& Y = args.outputs[0];

  const int ra = A.desc.rank(), rb = B.desc.rank();
  const int64_t K = at.trans_a ? A.desc.dim(ra - 2) : A.desc.dim(ra - 1);
  // Element strides of op(A) along (m, k) and of op(B) along (k, n): the trans flags only
  // swap which stored axis plays which role.
  const int64_t a_m = at.trans_a ? A.desc.stride(ra - 1) : A.desc.stride(ra - 2);
  const int64_t a_k = at.trans_a ? A.desc.stride(ra - 2) : A.desc.stride(ra - 1);
  const int64_t b_k = at.trans_b ? B.desc.stride(rb - 1) : B.desc.stride(rb - 2);
  const int64_t b_n = at.trans_b ? B.desc.stride(rb - 2) : B.desc.stride(rb - 1);

  // No output element is read back, and matmul never runs in place, so direct stores are safe.
  ref::for_each_index(Y.desc.dims(), [&](std::span<const int64_t> idx) {
    const int64_t m = idx[idx.size() - 2], n = idx[idx.size() - 1];
    const int64_t a0 = matrix_base(A.desc, idx) + m * a_m;
    const int64_t b0 = matrix_base(B.desc, idx) + n * b_n;
    double acc = 0.0;
    for (int64_t k = 0; k < K; ++k) acc += ref::load(A, a0 + k * a_k) * ref::load(B, b0 + k * b_k);
    const double b = bias != nullptr ? ref::load(*bias, n * bias->desc.stride(0)) : 0.0;
    double c = 0.0;
    if (C != nullptr) {
      const int rc = C->desc.rank();
      c = ref::load(*C, matrix_base(C->desc, idx) + m * C->desc.stride(rc - 2) + n * C->desc.stride(rc - 1));
    }
    ref::store(Y, ref::offset_of(Y.desc, idx), ref::matmul_epilogue(at, acc, b, c));
  });
  return {};
}

}  // namespace longrun
