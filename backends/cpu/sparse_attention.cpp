// Dispatch of the cpu sparse_attention kernels: views -> AttentionProblem, index
// validation, the prepare step. No intrinsics here; the ISA work is in
// sparse_attention_avx2.cpp / sparse_attention_avx512.cpp.
#include "cpu/sparse_attention.h"

#include <algorithm>
#include <cstdint>
#include <new>
#include <vector>

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

// Rounds the f32 rank-4 view t (any strides) to bf16 into the contiguous dst, rows of
// dim 3 split over the pool. Elementwise, so the copy is the same at any thread count.
void round_to_bf16(const TensorView& t, uint16_t* dst, ThreadPool* pool) {
  const TensorDesc& d = t.desc;
  const int64_t n = d.dim(3), rows = d.dim(0) * d.dim(1) * d.dim(2);
  if (rows == 0 || n == 0) return;
  const auto* src = static_cast<const float*>(t.data);
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t i2 = r % d.dim(2), i1 = r / d.dim(2) % d.dim(1), i0 = r / d.dim(2) / d.dim(1);
      const float* row = src + i0 * d.stride(0) + i1 * d.stride(1) + i2 * d.stride(2);
      uint16_t* out = dst + r * n;
      if (d.stride(3) == 1)
        for (int64_t e = 0; e < n; ++e) out[e] = f32_to_bf16(row[e]);
      else
        for (int64_t e = 0; e < n; ++e) out[e] = f32_to_bf16(row[e * d.stride(3)]);
    }
  };
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / n);  // 16K elements a chunk
  if (pool != nullptr && rows > grain)
    pool->parallel_for(rows, grain, body);
  else
    body(0, rows);
}

// bf16 sessions (sparse_attention.h): f32 K and V rounded to bf16 copies, then the run on
// them; any other K and V as given. The reference fallbacks of run_sparse (unusual views,
// errors) then also see the rounded values, as the reference backend's bf16 sessions do.
Status run_sparse_bf16(const KernelArgs& args, AttentionItemsFn fn) {
  if (args.inputs.size() != 4) return run_sparse(args, fn);
  const TensorView &k = args.inputs[1], &v = args.inputs[2];
  const int64_t floats = sparse_rounded_kv_floats(k.desc, v.desc);
  if (floats == 0) return run_sparse(args, fn);
  std::vector<uint16_t> local;  // a run without prepared scratch (a direct call)
  auto* k16 = reinterpret_cast<uint16_t*>(prepared_attention_extra(args, floats));
  if (k16 == nullptr) {
    try {
      local.resize(size_t(floats) * 2);
    } catch (const std::bad_alloc&) {
      return out_of_memory("sparse_attention: cannot allocate the bf16 copies of K " + k.desc.to_string() +
                           " and V " + v.desc.to_string());
    }
    k16 = local.data();
  }
  uint16_t* v16 = k16 + sparse_rounded_kv_elements(k.desc.numel());
  round_to_bf16(k, k16, args.pool);
  round_to_bf16(v, v16, args.pool);
  const TensorView in[4] = {args.inputs[0],
                            {TensorDesc(DType::bf16, k.desc.dims()), k16},
                            {TensorDesc(DType::bf16, v.desc.dims()), v16},
                            args.inputs[3]};
  KernelArgs rounded = args;
  rounded.inputs = in;
  return run_sparse(rounded, fn);
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

Result<std::shared_ptr<void>> prepare_sparse_attention_bf16(const Graph& graph, const Node& node,
                                                            ThreadPool* pool) {
  const TensorDesc& q = graph.value(node.inputs[0]).desc;
  const TensorDesc& k = graph.value(node.inputs[1]).desc;
  const TensorDesc& v = graph.value(node.inputs[2]).desc;
  const TensorDesc& ix = graph.value(node.inputs[3]).desc;
  const int64_t floats = sparse_rounded_kv_floats(k, v);
  if (floats == 0) return prepare_sparse_attention(graph, node, pool);
  return make_attention_scratch(sparse_items(q.dim(0), q.dim(1), q.dim(2), k.dim(2), ix.dim(3), q.dim(3), 2),
                                sparse_scratch_layout(q.dim(2), k.dim(2), ix.dim(3), q.dim(3), 2).floats,
                                pool, kSparseChunksPerThread, floats);
}

Status cpu_sparse_attention_f32_avx2(const KernelArgs& args) {
  return run_sparse(args, &sparse_attention_items_f32_avx2);
}
Status cpu_sparse_attention_f32_avx512(const KernelArgs& args) {
  return run_sparse(args, &sparse_attention_items_f32_avx512);
}
Status cpu_sparse_attention_bf16_avx2(const KernelArgs& args) {
  return run_sparse_bf16(args, &sparse_attention_items_f32_avx2);
}
Status cpu_sparse_attention_bf16_avx512(const KernelArgs& args) {
  return run_sparse_bf16(args, &sparse_attention_items_f32_avx512);
}

}  // namespace longrun::cpu
