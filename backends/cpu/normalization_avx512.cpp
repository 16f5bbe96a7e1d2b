// AVX-512 instantiation of the softmax and layer_norm row primitives (normalization_impl.h,
// contract in normalization.h): 16 lanes, k-mask tails.
#define LONGRUN_CPU_ISA_FILE
#include "cpu/normalization_impl.h"
#include "cpu/vec_avx512.h"

namespace longrun::cpu {
namespace {
struct SoftmaxAvx512 {
  static constexpr bool kMaskEveryVector = true;  // k-masked loads are free
};
}  // namespace

const NormalizationIsa kNormalizationAvx512 = NormalizationKernels<avx512::Vec, SoftmaxAvx512>::kTable;

}  // namespace longrun::cpu
