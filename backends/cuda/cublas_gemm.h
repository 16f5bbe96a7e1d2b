// The row-major callers' cuBLAS entry (matmul.cu, spectral.cu), defined in matmul.cu.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "longrun/status.h"

namespace longrun::cuda {

class Context;

// C_i = alpha op_a(A_i) op_b(B_i) in column-major terms for i < batch, beta = 0 (C's old
// contents are never read), FP32. Batches go in chunks that stay well inside any
// launch-grid limit; a dimension past cuBLAS's int range is unsupported.
Status sgemm_strided_batched(const Context& ctx, cublasOperation_t op_a, cublasOperation_t op_b, int64_t m,
                             int64_t n, int64_t k, float alpha, const float* a, int64_t lda, int64_t stride_a,
                             const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                             int64_t stride_c, int64_t batch);

}  // namespace longrun::cuda
