// AVX512 instantiation of the gathered-key sparse attention (sparse_attention_impl.h).
#include "cpu/attention_vexp_avx512.h"
#include "cpu/sparse_attention_impl.h"

namespace longrun::cpu {

bool sparse_attention_items_f32_avx512(const AttentionProblem& p, int64_t begin, int64_t end,
                                       float* scratch) {
  if (p.k16 != nullptr) return SparseAttention<attn_avx512::Vec, uint16_t>::run(p, begin, end, scratch);
  return SparseAttention<attn_avx512::Vec, float>::run(p, begin, end, scratch);
}

}  // namespace longrun::cpu
