// AVX2+FMA instantiation of the softmax and layer_norm row primitives
// (normalization_impl.h, contract in normalization.h): 8 lanes.
#define LONGRUN_CPU_ISA_FILE
#include "cpu/normalization_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu {
namespace {
struct SoftmaxAvx2 {
  static constexpr bool kMaskEveryVector = false;  // unmasked whole vectors
};
}  // namespace

const NormalizationIsa kNormalizationAvx2 = NormalizationKernels<avx2::Vec, SoftmaxAvx2>::kTable;

}  // namespace longrun::cpu
