// AVX-512 instantiation of the flash-style dense attention (attention_flash_impl.h).
// Register tiles: S^T is 6 keys x 4 query vectors (24 accumulators + 4 Qt vectors of the
// 32 zmm registers), P V is 6 query rows x 4 hv vectors (24 accumulators + 4 V vectors).
#include "cpu/attention_flash_impl.h"
#include "cpu/attention_vexp_avx512.h"

namespace longrun::cpu {
namespace {
struct TilesAvx512 {
  static constexpr int kQkKeys = 6, kQkVecs = 4, kPvRows = 6, kPvVecs = 4;
};
}  // namespace

bool attention_items_f32_avx512(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch) {
  return FlashAttention<attn_avx512::Vec, TilesAvx512>::run(p, begin, end, scratch);
}
void axial_attention_items_f32_avx512(const AxialProblem& a, int pass, int64_t begin, int64_t end,
                                      float* scratch) {
  FlashAttention<attn_avx512::Vec, TilesAvx512>::run_axial(a, pass, begin, end, scratch);
}

}  // namespace longrun::cpu
