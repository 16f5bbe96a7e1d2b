// AVX2+FMA instantiation of the elementwise row primitives (elementwise_impl.h, contract in
// elementwise.h): 8 lanes; 16-bit tails through a zero-padded copy (avx2::Vec::load_u16_n).
#define LONGRUN_CPU_ISA_FILE
#include "cpu/elementwise_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu {

const ElementwiseIsa kElementwiseAvx2 = ElementwiseKernels<avx2::Vec>::kTable;

}  // namespace longrun::cpu
