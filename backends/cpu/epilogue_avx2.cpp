// AVX2 instantiation of the matmul epilogue (epilogue_impl.h; gemm.h).
#include "cpu/epilogue_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu::gemm {

void gemm_epilogue_f32_avx2(float* y, int64_t ldy, int64_t m, int64_t n, const Epilogue& e) {
  EpilogueKernels<avx2::Vec>::run(y, ldy, m, n, e);
}

}  // namespace longrun::cpu::gemm
