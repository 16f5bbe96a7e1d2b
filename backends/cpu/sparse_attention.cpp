// Dispatch of the cpu sparse_attention kernels: views -> AttentionProblem, index
// validation, the prepare step. No intrinsics here; the ISA work is in
// sparse_attention_avx2.cpp / sparse_attention_avx512.cpp.
#include "cpu/sparse_attention.h"

#include <cstdint>

#include "cpu/attention.h"
#include "cpu/cpu_isa.h"

namespace longrun::cpu {
namespace {

bool rows_f32(const TensorView& t) {
  return t.desc.dtype() == DType::f32 && t.desc.rank() == 4 && (t.desc.dim(3) <= 1 || t.desc.stride(3) == 1);
}

// Fills p from the kernel arguments; false when the views are not what the vectorised
// kernel handles (the reference kernel then runs, and reports any error).
bool sparse_problem(const KernelArgs& args, AttentionProblem* p) {
  const auto* at = std::get_if<SparseAttentionAttrs>(args.attrs);
  if (at == nullptr || args.inputs.size() != 4 || args.outputs.size() != 1) return false;
  const TensorView &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2], &ix = args.inputs[3],
                   &y = args.outputs[0];
  if (!rows_f32(q) || !rows_f32(k) || !rows_f32(v) || !rows_f32(y)) return false;
  if (ix.desc.dtype() != DType::i32 || ix.desc.rank() != 4) return false;
  p->B = q.desc.dim(0);
  p->H = q.desc.dim(1);
  p->Nq = q.desc.dim(2);
  p->Nk = k.desc.dim(2);
  p->hd = q.desc.dim(3);
  p->hv = v.desc.dim(3);
  p->kk = ix.desc.dim(3);
  const int64_t kd[4] = {p->B, p->H, p->Nk, p->hd}, vd[4] = {p->B, p->H, p->Nk, p->hv},
                yd[4] = {p->B, p->H, p->Nq, p->hv};
  for (int i = 0; i < 4; ++i)
    if (k.desc.dim(i) != kd[i] || v.desc.dim(i) != vd[i] || y.desc.dim(i) != yd[i]) return false;
  if ((ix.desc.dim(0) != 1 && ix.desc.dim(0) != p->B) || (ix.desc.dim(1) != 1 && ix.desc.dim(1) != p->H) ||
      ix.desc.dim(2) != p->Nq || p->kk > INT32_MAX)
    return false;
  p->q = static_cast<const float*>(q.data);
  p->k = static_cast<const float*>(k.data);
  p->v = static_cast<const float*>(v.data);
  p->y = static_cast<float*>(y.data);
  p->idx = static_cast<const int32_t*>(ix.data);
  for (int i = 0; i < 3; ++i) {
    p->qs[i] = q.desc.stride(i);
    p->ks[i] = k.desc.stride(i);
    p->vs[i] = v.desc.stride(i);
    p->ys[i] = y.desc.stride(i);
  }
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
  if (!run_attention_items(args, p, sparse_items(p.B, p.H, p.Nq, p.Nk, p.kk, p.hd),
                           sparse_scratch_layout(p.Nq, p.Nk, p.kk, p.hd).floats, fn, kSparseChunksPerThread))
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
  return make_attention_scratch(sparse_items(q.dim(0), q.dim(1), q.dim(2), k.dim(2), ix.dim(3), q.dim(3)),
                                sparse_scratch_layout(q.dim(2), k.dim(2), ix.dim(3), q.dim(3)).floats, pool,
                                kSparseChunksPerThread);
}

Status cpu_sparse_attention_f32_avx2(const KernelArgs& args) {
  return run_sparse(args, &sparse_attention_items_f32_avx2);
}
Status cpu_sparse_attention_f32_avx512(const KernelArgs& args) {
  return run_sparse(args, &sparse_attention_items_f32_avx512);
}

}  // namespace longrun::cpu
