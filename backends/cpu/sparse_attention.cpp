// Dispatch of the cpu sparse_attention kernels: views -> AttentionProblem, index
// validation, the prepare step. No intrinsics here; the ISA work is in
// sparse_attention_avx2.cpp / sparse_attention_avx512.cpp.
#include "cpu/sparse_attention.h"

#include <cstdint>

#include "cpu/attention.h"
#include "cpu/cpu_isa.h"

namespace longrun::cpu {
namespace {

// Fills p from the kernel arguments; false when the views are not what the vectorised
// kernel handles (the reference kernel then runs, and reports any error).
bool sparse_problem(const KernelArgs& args, AttentionProblem* p) {
  const auto* at = std::get_if<SparseAttentionAttrs>(args.attrs);
  if (at == nullptr || args.inputs.size() != 4 || args.outputs.size() != 1) return false;
  const TensorView &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2], &ix = args.inputs[3],
                   &y = args.outputs[0];
  if (ix.desc.dtype() != DType::i32 || ix.desc.rank() != 4 || !take_qkvy(q, k, v, y, p)) return false;
  p->kk = ix.desc.dim(3);
  if ((ix.desc.dim(0) != 1 && ix.desc.dim(0) != p->B) || (ix.desc.dim(1) != 1 && ix.desc.dim(1) != p->H) ||
      ix.desc.dim(2) != p->Nq || p->kk > INT32_MAX)
    return false;
  p->idx = static_cast<const int32_t*>(ix.data);
  // Broadcast dims (size 1) read index 0: a zero stride makes (b, h) land there.
  p->is[0] = ix.desc.dim(0) == 1 ? 0 : ix.desc.stride(0);
  p->is[1] = ix.desc.dim(1) == 1 ? 0 : ix.desc.stride(1);
  p->is[2] = ix.desc.stride(2);
  p->is[3] = ix.desc.stride(3);
  p->scale = at->scale;
  return true;
}

Status run_sparse(const KernelArgs& args, AttentionItemsFn fn) {
  AttentionProblem p;
  if (!sparse_problem(args, &p)) return reference_sparse_attention(args);
  if (p.hv == 0) return reference_sparse_attention(args);  // nothing to write: only validation
  // Indices are validated while the kernel runs; on a bad one the reference kernel (which
  // checks before writing) produces the error naming the first bad index.
  const int64_t kv_bytes = p.k16 != nullptr ? 2 : 4;
  if (!run_attention_items(args, p, sparse_items(p.B, p.H, p.Nq, p.Nk, p.kk, p.hd, kv_bytes),
                           sparse_scratch_layout(p.Nq, p.Nk, p.kk, p.hd, kv_bytes).floats, fn,
                           kSparseChunksPerThread))
    return reference_sparse_attention(args);
  return {};
}

}  // namespace

int64_t& sparse_l2_bytes() {
  static int64_t bytes = l2_cache_bytes();
  return bytes;
}

Result<std::shared_ptr<void>> prepare_sparse_attention(const Graph& graph, const Node& node,
                                                       ThreadPool* pool) {
  const TensorDesc& q = graph.value(node.inputs[0]).desc;
  const TensorDesc& k = graph.value(node.inputs[1]).desc;
  const TensorDesc& ix = graph.value(node.inputs[3]).desc;
  const int64_t kv_bytes = int64_t(dtype_size(k.dtype()));
  return make_attention_scratch(
      sparse_items(q.dim(0), q.dim(1), q.dim(2), k.dim(2), ix.dim(3), q.dim(3), kv_bytes),
      sparse_scratch_layout(q.dim(2), k.dim(2), ix.dim(3), q.dim(3), kv_bytes).floats, pool,
      kSparseChunksPerThread);
}

Status cpu_sparse_attention_f32_avx2(const KernelArgs& args) {
  return run_sparse(args, &sparse_attention_items_f32_avx2);
}
Status cpu_sparse_attention_f32_avx512(const KernelArgs& args) {
  return run_sparse(args, &sparse_attention_items_f32_avx512);
}

}  // namespace longrun::cpu
