// AVX-512 instantiation of the elementwise row primitives (elementwise_impl.h, contract in
// elementwise.h): 16 lanes, every tail under a k-mask.
#define LONGRUN_CPU_ISA_FILE
#include "cpu/elementwise_impl.h"
#include "cpu/vec_avx512.h"

namespace longrun::cpu {

const ElementwiseIsa kElementwiseAvx512 = ElementwiseKernels<avx512::Vec>::kTable;

}  // namespace longrun::cpu
