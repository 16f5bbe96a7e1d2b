// AVX-512 instantiation of the matmul epilogue (epilogue_impl.h; gemm.h): scalef for 2^n.
#include "cpu/epilogue_impl.h"
#include "cpu/vec_avx512.h"

namespace longrun::cpu::gemm {

void gemm_epilogue_f32_avx512(float* y, int64_t ldy, int64_t m, int64_t n, const Epilogue& e) {
  EpilogueKernels<avx512::Vec>::run(y, ldy, m, n, e);
}

}  // namespace longrun::cpu::gemm
