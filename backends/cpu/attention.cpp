// Dispatch of the cpu attention kernels: views -> AttentionProblem, scratch layout, the
// prepare step and the chunked parallel run shared with sparse_attention. No intrinsics
// here; the ISA work is in attention_avx2.cpp / attention_avx512.cpp.
#include "cpu/attention.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

namespace longrun::cpu {
namespace {

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// The scratch a prepare step requests: `chunks` buffers of `per_chunk` floats in the prepared
// graph's shared scratch (host::request_scratch). Runs of one prepared graph are serialised
// by the caller and nodes run one at a time, so a run may write it.
struct AttentionScratch {
  int64_t chunks = 0;
  int64_t per_chunk = 0;
  std::shared_ptr<const host::SharedScratch> data;
};

bool rank4_f32_rows(const TensorView& t) {
  return t.desc.dtype() == DType::f32 && t.desc.rank() == 4 && (t.desc.dim(3) <= 1 || t.desc.stride(3) == 1);
}

void copy_strides(const TensorView& t, int64_t* s) {
  for (int i = 0; i < 3; ++i) s[i] = t.desc.stride(i);
}

// Fills p from the kernel arguments; false when the views are not what the vectorised
// kernel handles (the reference kernel then runs, and reports any error).
bool attention_problem(const KernelArgs& args, AttentionProblem* p) {
  const auto* at = std::get_if<AttentionAttrs>(args.attrs);
  if (at == nullptr || args.inputs.size() != (at->has_key_padding_mask ? 4u : 3u) || args.outputs.size() != 1)
    return false;
  const TensorView &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2], &y = args.outputs[0];
  if (!rank4_f32_rows(q) || !rank4_f32_rows(k) || !rank4_f32_rows(v) || !rank4_f32_rows(y)) return false;
  p->B = q.desc.dim(0);
  p->H = q.desc.dim(1);
  p->Nq = q.desc.dim(2);
  p->Nk = k.desc.dim(2);
  p->hd = q.desc.dim(3);
  p->hv = v.desc.dim(3);
  const int64_t kd[4] = {p->B, p->H, p->Nk, p->hd}, vd[4] = {p->B, p->H, p->Nk, p->hv},
                yd[4] = {p->B, p->H, p->Nq, p->hv};
  for (int i = 0; i < 4; ++i)
    if (k.desc.dim(i) != kd[i] || v.desc.dim(i) != vd[i] || y.desc.dim(i) != yd[i]) return false;
  if (p->Nk > INT32_MAX) return false;  // key lists are int32
  if (at->has_key_padding_mask) {
    const TensorView& mask = args.inputs[3];
    if (mask.desc.dtype() != DType::u8 || mask.desc.rank() != 2 || mask.desc.dim(0) != p->B ||
        mask.desc.dim(1) != p->Nk)
      return false;
    p->mask = static_cast<const uint8_t*>(mask.data);
    p->ms[0] = mask.desc.stride(0);
    p->ms[1] = mask.desc.stride(1);
  }
  p->q = static_cast<const float*>(q.data);
  p->k = static_cast<const float*>(k.data);
  p->v = static_cast<const float*>(v.data);
  p->y = static_cast<float*>(y.data);
  copy_strides(q, p->qs);
  copy_strides(k, p->ks);
  copy_strides(v, p->vs);
  copy_strides(y, p->ys);
  p->scale = at->scale;
  p->causal = at->causal;
  return true;
}

int64_t attention_items(const AttentionProblem& p) {
  return p.B * p.H * ((p.Nq + kAttnBlockQ - 1) / kAttnBlockQ);
}

Status run_attention(const KernelArgs& args, AttentionItemsFn fn) {
  AttentionProblem p;
  if (!attention_problem(args, &p)) return reference_attention(args);
  if (p.hv == 0) return {};
  run_attention_items(args, p, attention_items(p), attention_scratch_layout(p.Nk, p.hd, p.hv).floats, fn);
  return {};
}

}  // namespace

AttentionScratchLayout attention_scratch_layout(int64_t Nk, int64_t hd, int64_t hv) {
  AttentionScratchLayout s;
  int64_t at = 0;
  auto take = [&](int64_t n) {
    const int64_t off = at;
    at += round16(n);
    return off;
  };
  s.qt = take(hd * kAttnBlockQ);
  s.s = take(int64_t(kAttnBlockK) * kAttnBlockQ);
  s.o = take(int64_t(kAttnBlockQ) * attention_hv_pad(hv));
  s.vp = take(int64_t(kAttnBlockK) * attention_hv_pad(hv));
  s.m = take(kAttnBlockQ);
  s.l = take(kAttnBlockQ);
  s.alpha = take(kAttnBlockQ);
  s.keys = take(Nk);  // int32 key list, stored in float-sized slots
  s.nvis = take(kAttnBlockQ);
  s.floats = at;
  return s;
}

namespace {
int64_t attention_chunks(int64_t items, int threads, int chunks_per_thread) {
  return std::min(thread_pool_chunk_count(items, 1, threads), int64_t(threads) * chunks_per_thread);
}
}  // namespace

Result<std::shared_ptr<void>> make_attention_scratch(int64_t items, int64_t floats, ThreadPool* pool,
                                                     int chunks_per_thread) {
  auto s = std::make_shared<AttentionScratch>();
  s->chunks = attention_chunks(items, pool != nullptr ? pool->num_threads() : 1, chunks_per_thread);
  s->per_chunk = round16(floats);
  LR_ASSIGN_OR_RETURN(s->data, host::request_scratch(s->chunks * s->per_chunk * int64_t(sizeof(float))));
  return std::shared_ptr<void>(std::move(s));
}

bool run_attention_items(const KernelArgs& args, const AttentionProblem& p, int64_t items, int64_t floats,
                         AttentionItemsFn fn, int chunks_per_thread) {
  if (items <= 0) return true;
  int64_t chunks =
      attention_chunks(items, args.pool != nullptr ? args.pool->num_threads() : 1, chunks_per_thread);
  // Outputs do not depend on the chunking, so fewer prepared buffers only cost parallelism.
  const auto* prepared = static_cast<const AttentionScratch*>(args.prepared);
  std::vector<float> local;  // only for a run without (matching) prepared scratch
  float* base = nullptr;
  int64_t per_chunk = round16(floats);
  if (prepared != nullptr && prepared->chunks > 0 && prepared->per_chunk >= per_chunk) {
    chunks = std::min(chunks, prepared->chunks);
    per_chunk = prepared->per_chunk;
    base = prepared->data->floats();
  } else {
    local.resize(size_t(chunks * per_chunk));
    base = local.data();
  }
  std::atomic<bool> ok{true};  // a flag, not a reduction: outputs never depend on it
  auto body = [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t begin = 0, end = 0;
      thread_pool_chunk_range(items, chunks, c, &begin, &end);
      if (!fn(p, begin, end, base + c * per_chunk)) ok.store(false, std::memory_order_relaxed);
    }
  };
  if (args.pool != nullptr && chunks > 1)
    args.pool->parallel_for(chunks, 1, body);
  else
    body(0, chunks);
  return ok.load();
}

Result<std::shared_ptr<void>> prepare_attention(const Graph& graph, const Node& node, ThreadPool* pool) {
  const TensorDesc& q = graph.value(node.inputs[0]).desc;
  const TensorDesc& k = graph.value(node.inputs[1]).desc;
  const TensorDesc& v = graph.value(node.inputs[2]).desc;
  const int64_t items = q.dim(0) * q.dim(1) * ((q.dim(2) + kAttnBlockQ - 1) / kAttnBlockQ);
  return make_attention_scratch(items, attention_scratch_layout(k.dim(2), q.dim(3), v.dim(3)).floats, pool);
}

Status cpu_attention_f32_avx2(const KernelArgs& args) {
  return run_attention(args, &attention_items_f32_avx2);
}
Status cpu_attention_f32_avx512(const KernelArgs& args) {
  return run_attention(args, &attention_items_f32_avx512);
}

}  // namespace longrun::cpu
