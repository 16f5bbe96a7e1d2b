// AVX2+FMA instantiation of the softmax and layer_norm row primitives
// (normalization_impl.h, contract in normalization.h): 8 lanes.
#define LONGRUN_CPU_ISA_FILE
#include "cpu/normalization_impl.h"
#include "cpu/vec_avx2.h"

namespace longrun::cpu {
namespace {
struct NormalizationAvx2 {
  static constexpr bool kShiftByFirstLogit = false;  // exp_neg_ps wraps above 88 (normalization_impl.h)
  static constexpr bool kMaskEveryVector = false;    // unmasked whole vectors
  // layer_norm's input from beyond the last-level cache: fetched in the normalise pass
  static constexpr bool kLayerNormFetchFromMemory = true;
};
}  // namespace

const NormalizationIsa kNormalizationAvx2 = NormalizationKernels<avx2::Vec, NormalizationAvx2>::kTable;

}  // namespace longrun::cpu
