// AVX2 + FMA instantiation of the flash-style dense attention (attention_flash_impl.h).
// Register tiles fit the 16 ymm registers: S^T is 6 keys x 2 query vectors (12 accumulators
// + 2 Qt vectors + 1 broadcast), P V is 6 query rows x 2 hv vectors (12 + 2 + 1): the
// largest tiles that leave no accumulator to spill, so each load feeds the most FMAs.
#include "cpu/attention_flash_impl.h"
#include "cpu/attention_vexp_avx2.h"

namespace longrun::cpu {
namespace {
struct TilesAvx2 {
  static constexpr int kQkKeys = 6, kQkVecs = 2, kPvRows = 6, kPvVecs = 2;
};
}  // namespace

bool attention_items_f32_avx2(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch) {
  return FlashAttention<attn_avx2::Vec, TilesAvx2>::run(p, begin, end, scratch);
}
void axial_attention_items_f32_avx2(const AxialProblem& a, int pass, int64_t begin, int64_t end,
                                    float* scratch) {
  FlashAttention<attn_avx2::Vec, TilesAvx2>::run_axial(a, pass, begin, end, scratch);
}

}  // namespace longrun::cpu
