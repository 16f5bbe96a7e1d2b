// AVX-512 instantiation of the softmax and layer_norm row primitives (normalization_impl.h,
// contract in normalization.h): 16 lanes, k-mask tails.
#define LONGRUN_CPU_ISA_FILE
#include "cpu/normalization_impl.h"
#include "cpu/vec_avx512.h"

namespace longrun::cpu {
namespace {
struct NormalizationAvx512 {
  static constexpr bool kShiftByFirstLogit = true;  // scalef overflows to +inf
  static constexpr bool kMaskEveryVector = true;    // k-masked loads are free
  // layer_norm's input from beyond the last-level cache: no fetch (normalization_impl.h)
  static constexpr bool kLayerNormFetchFromMemory = false;
};
}  // namespace

const NormalizationIsa kNormalizationAvx512 = NormalizationKernels<avx512::Vec, NormalizationAvx512>::kTable;

}  // namespace longrun::cpu
