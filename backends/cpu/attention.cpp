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
  int64_t extra = 0;  // floats after the chunks' buffers (axial_attention's log-sum-exps,
                      // sparse_attention's bf16 copies of K and V in bf16 sessions)
  std::shared_ptr<const host::SharedScratch> data;
};

bool rank4_rows(const TensorView& t, DType dtype) {
  return t.desc.dtype() == dtype && t.desc.rank() == 4 && (t.desc.dim(3) <= 1 || t.desc.stride(3) == 1);
}
bool rank4_f32_rows(const TensorView& t) { return rank4_rows(t, DType::f32); }

void copy_strides(const TensorView& t, int64_t* s) {
  for (int i = 0; i < 3; ++i) s[i] = t.desc.stride(i);
}

// The key padding mask u8 [B, Nk] (p's B and Nk already set); false when it is not that.
bool take_key_mask(const TensorView& mask, AttentionProblem* p) {
  if (mask.desc.dtype() != DType::u8 || mask.desc.rank() != 2 || mask.desc.dim(0) != p->B ||
      mask.desc.dim(1) != p->Nk)
    return false;
  p->mask = static_cast<const uint8_t*>(mask.data);
  p->ms[0] = mask.desc.stride(0);
  p->ms[1] = mask.desc.stride(1);
  return true;
}

// Fills p from the kernel arguments; false when the views are not what the vectorised
// kernel handles (the reference kernel then runs, and reports any error).
bool attention_problem(const KernelArgs& args, AttentionProblem* p) {
  const auto* at = std::get_if<AttentionAttrs>(args.attrs);
  if (at == nullptr || args.inputs.size() != (at->has_key_padding_mask ? 4u : 3u) ||
      args.outputs.size() != (at->with_lse ? 2u : 1u))
    return false;
  const TensorView &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2], &y = args.outputs[0];
  if (at->with_lse) {
    const TensorView& lse = args.outputs[1];
    if (lse.desc.dtype() != DType::f32 || lse.desc.rank() != 3) return false;
    p->lse_out = static_cast<float*>(lse.data);
    for (int i = 0; i < 3; ++i) p->ls[i] = lse.desc.stride(i);
  }
  if (!take_qkvy(q, k, v, y, p)) return false;
  if (p->Nk > INT32_MAX) return false;  // key lists are int32
  if (at->has_key_padding_mask && !take_key_mask(args.inputs[3], p)) return false;
  p->scale = at->scale;
  p->causal = at->causal;
  p->causal_offset = p->Nk - p->Nq;
  return true;
}

int64_t attention_items(const AttentionProblem& p) {
  return p.B * p.H * ((p.Nq + kAttnBlockQ - 1) / kAttnBlockQ);
}

Status run_attention(const KernelArgs& args, AttentionItemsFn fn) {
  AttentionProblem p;
  if (!attention_problem(args, &p)) return reference_attention(args);
  if (p.hv == 0) return {};
  run_attention_items(args, p, attention_items(p),
                      attention_scratch_layout(p.Nk, p.hd, p.hv, p.k16 != nullptr).floats, fn);
  return {};
}

}  // namespace

bool take_qkvy(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& y,
               AttentionProblem* p) {
  const bool kv_bf16 = k.desc.dtype() == DType::bf16;
  const DType kv = kv_bf16 ? DType::bf16 : DType::f32;
  if (!rank4_f32_rows(q) || !rank4_rows(k, kv) || !rank4_rows(v, kv) || !rank4_f32_rows(y)) return false;
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
  p->q = static_cast<const float*>(q.data);
  if (kv_bf16) {
    p->k16 = static_cast<const uint16_t*>(k.data);
    p->v16 = static_cast<const uint16_t*>(v.data);
  } else {
    p->k = static_cast<const float*>(k.data);
    p->v = static_cast<const float*>(v.data);
  }
  p->y = static_cast<float*>(y.data);
  copy_strides(q, p->qs);
  copy_strides(k, p->ks);
  copy_strides(v, p->vs);
  copy_strides(y, p->ys);
  return true;
}

AttentionScratchLayout attention_scratch_layout(int64_t Nk, int64_t hd, int64_t hv, bool kv_bf16) {
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
  s.kp = take(kv_bf16 ? int64_t(kAttnBlockK) * attention_hd_pad(hd) : 0);
  s.floats = at;
  return s;
}

namespace {
int64_t attention_chunks(int64_t items, int threads, int chunks_per_thread) {
  return std::min(thread_pool_chunk_count(items, 1, threads), int64_t(threads) * chunks_per_thread);
}
}  // namespace

Result<std::shared_ptr<void>> make_attention_scratch(int64_t items, int64_t floats, ThreadPool* pool,
                                                     int chunks_per_thread, int64_t extra_floats) {
  auto s = std::make_shared<AttentionScratch>();
  s->chunks = attention_chunks(items, pool != nullptr ? pool->num_threads() : 1, chunks_per_thread);
  s->per_chunk = round16(floats);
  s->extra = round16(extra_floats);
  LR_ASSIGN_OR_RETURN(s->data,
                      host::request_scratch((s->chunks * s->per_chunk + s->extra) * int64_t(sizeof(float))));
  return std::shared_ptr<void>(std::move(s));
}

namespace {
// The chunk buffers of one run: the prepared ones, or (a run without matching prepared
// scratch) `local`. Outputs do not depend on the chunking, so fewer prepared buffers only
// cost parallelism. extra: floats wanted after the buffers (null when 0).
struct ChunkBuffers {
  int64_t chunks = 0, per_chunk = 0;
  float* base = nullptr;
  float* extra = nullptr;
};
ChunkBuffers chunk_buffers(const KernelArgs& args, int64_t items, int64_t floats, int chunks_per_thread,
                           int64_t extra, std::vector<float>& local) {
  ChunkBuffers b;
  b.chunks = attention_chunks(items, args.pool != nullptr ? args.pool->num_threads() : 1, chunks_per_thread);
  b.per_chunk = round16(floats);
  const auto* prepared = static_cast<const AttentionScratch*>(args.prepared);
  if (prepared != nullptr && prepared->chunks > 0 && prepared->per_chunk >= b.per_chunk &&
      prepared->extra >= extra) {
    b.chunks = std::min(b.chunks, prepared->chunks);
    b.per_chunk = prepared->per_chunk;
    b.base = prepared->data->floats();
    b.extra = b.base + prepared->chunks * prepared->per_chunk;
  } else {
    local.resize(size_t(b.chunks * b.per_chunk + extra));
    b.base = local.data();
    b.extra = b.base + b.chunks * b.per_chunk;
  }
  if (extra == 0) b.extra = nullptr;
  return b;
}

// Runs fn(begin, end, buffer) over the deterministic chunks of `items`, in parallel.
template <class Fn>
bool run_chunks(const KernelArgs& args, int64_t items, const ChunkBuffers& b, Fn&& fn) {
  if (items <= 0) return true;
  const int64_t chunks = std::min(b.chunks, items);
  std::atomic<bool> ok{true};  // a flag, not a reduction: outputs never depend on it
  auto body = [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t begin = 0, end = 0;
      thread_pool_chunk_range(items, chunks, c, &begin, &end);
      if (!fn(begin, end, b.base + c * b.per_chunk)) ok.store(false, std::memory_order_relaxed);
    }
  };
  if (args.pool != nullptr && chunks > 1)
    args.pool->parallel_for(chunks, 1, body);
  else
    body(0, chunks);
  return ok.load();
}
}  // namespace

float* prepared_attention_extra(const KernelArgs& args, int64_t floats) {
  const auto* prepared = static_cast<const AttentionScratch*>(args.prepared);
  if (prepared == nullptr || prepared->data == nullptr || prepared->extra < floats) return nullptr;
  return prepared->data->floats() + prepared->chunks * prepared->per_chunk;
}

bool run_attention_items(const KernelArgs& args, const AttentionProblem& p, int64_t items, int64_t floats,
                         AttentionItemsFn fn, int chunks_per_thread) {
  if (items <= 0) return true;
  std::vector<float> local;
  const ChunkBuffers b = chunk_buffers(args, items, floats, chunks_per_thread, 0, local);
  return run_chunks(args, items, b,
                    [&](int64_t begin, int64_t end, float* scratch) { return fn(p, begin, end, scratch); });
}

Result<std::shared_ptr<void>> prepare_attention(const Graph& graph, const Node& node, ThreadPool* pool) {
  const TensorDesc& q = graph.value(node.inputs[0]).desc;
  const TensorDesc& k = graph.value(node.inputs[1]).desc;
  const TensorDesc& v = graph.value(node.inputs[2]).desc;
  const int64_t items = q.dim(0) * q.dim(1) * ((q.dim(2) + kAttnBlockQ - 1) / kAttnBlockQ);
  return make_attention_scratch(
      items, attention_scratch_layout(k.dim(2), q.dim(3), v.dim(3), k.dtype() == DType::bf16).floats, pool);
}

// ---- axial_attention ------------------------------------------------------------------------
namespace {

bool axial_problem(const KernelArgs& args, AxialProblem* a) {
  const auto* at = std::get_if<AxialAttentionAttrs>(args.attrs);
  if (at == nullptr || args.inputs.size() != (at->has_key_padding_mask ? 6u : 5u) || args.outputs.size() != 1)
    return false;
  AttentionProblem& p = a->whole;
  // Inputs 1 and 2: k and v, or (has_direct_state) y0 and lse0.
  const TensorView &q = args.inputs[0], &in1 = args.inputs[1], &in2 = args.inputs[2], &ks = args.inputs[3],
                   &vs = args.inputs[4], &y = args.outputs[0];
  for (const TensorView* t : {&q, &in1, &ks, &vs, &y})
    if (!rank4_f32_rows(*t)) return false;
  p.B = q.desc.dim(0);
  p.H = q.desc.dim(1);
  p.Nq = p.Nk = q.desc.dim(2);
  p.hd = q.desc.dim(3);
  p.hv = vs.desc.dim(3);
  const int64_t kd[4] = {p.B, p.H, p.Nk, p.hd}, vd[4] = {p.B, p.H, p.Nk, p.hv};
  for (int i = 0; i < 4; ++i)
    if (ks.desc.dim(i) != kd[i] || vs.desc.dim(i) != vd[i] || y.desc.dim(i) != vd[i] ||
        in1.desc.dim(i) != (at->has_direct_state ? vd[i] : kd[i]))
      return false;
  if (at->has_direct_state) {
    if (in2.desc.dtype() != DType::f32 || in2.desc.rank() != 3) return false;
    for (int i = 0; i < 3; ++i)
      if (in2.desc.dim(i) != kd[i]) return false;
    a->y0 = static_cast<const float*>(in1.data);
    a->lse0 = static_cast<const float*>(in2.data);
    copy_strides(in1, a->y0s);
    for (int i = 0; i < 3; ++i) a->lse0s[i] = in2.desc.stride(i);
  } else {
    if (!rank4_f32_rows(in2)) return false;
    for (int i = 0; i < 4; ++i)
      if (in2.desc.dim(i) != vd[i]) return false;
    p.k = static_cast<const float*>(in1.data);
    p.v = static_cast<const float*>(in2.data);
    copy_strides(in1, p.ks);
    copy_strides(in2, p.vs);
  }
  if (at->segment < 1 || p.Nq % at->segment != 0 || p.Nk > INT32_MAX) return false;
  if (at->has_key_padding_mask && !take_key_mask(args.inputs[5], &p)) return false;
  p.q = static_cast<const float*>(q.data);
  p.y = static_cast<float*>(y.data);
  copy_strides(q, p.qs);
  copy_strides(y, p.ys);
  p.scale = at->scale;
  p.causal = at->causal;
  a->ksum = static_cast<const float*>(ks.data);
  a->vsum = static_cast<const float*>(vs.data);
  copy_strides(ks, a->kss);
  copy_strides(vs, a->vss);
  a->segment = at->segment;
  a->rows = p.Nq / at->segment;
  return true;
}

int64_t blocks_of(int64_t n) { return (n + kAttnBlockQ - 1) / kAttnBlockQ; }

// Work items of a pass: (b, h, row, query block) or (b, h, column, query block).
int64_t axial_pass_items(int64_t bh, int64_t segment, int64_t rows, int pass) {
  return pass == 0 ? bh * rows * blocks_of(segment) : bh * segment * blocks_of(rows);
}

// One chunk buffer serves both passes: a key list as long as the longer of a row and a column.
int64_t axial_floats(int64_t segment, int64_t rows, int64_t hd, int64_t hv) {
  return attention_scratch_layout(std::max(segment, rows), hd, hv).floats;
}

Status run_axial(const KernelArgs& args, AxialItemsFn fn) {
  AxialProblem a;
  if (!axial_problem(args, &a)) return reference_axial_attention(args);
  const AttentionProblem& p = a.whole;
  if (p.hv == 0 || p.Nq == 0) return {};
  const int64_t items = std::max(axial_items(a, 0), axial_items(a, 1));
  std::vector<float> local;
  const ChunkBuffers b = chunk_buffers(args, items, axial_floats(a.segment, a.rows, p.hd, p.hv), 4,
                                       a.y0 != nullptr ? 0 : p.B * p.H * p.Nq, local);
  a.lse = b.extra;
  for (int pass = a.y0 != nullptr ? 1 : 0; pass < 2; ++pass)
    run_chunks(args, axial_items(a, pass), b, [&](int64_t begin, int64_t end, float* scratch) {
      fn(a, pass, begin, end, scratch);
      return true;
    });
  return {};
}

}  // namespace

int64_t axial_items(const AxialProblem& a, int pass) {
  return axial_pass_items(a.whole.B * a.whole.H, a.segment, a.rows, pass);
}

Result<std::shared_ptr<void>> prepare_axial_attention(const Graph& graph, const Node& node,
                                                      ThreadPool* pool) {
  const TensorDesc& q = graph.value(node.inputs[0]).desc;
  const TensorDesc& v = graph.value(node.inputs[4]).desc;  // vs: hv in both modes
  const AxialAttentionAttrs& at = std::get<AxialAttentionAttrs>(node.attrs);
  const int64_t segment = std::max<int64_t>(1, at.segment);
  const int64_t bh = q.dim(0) * q.dim(1), n = q.dim(2), rows = n / segment;
  const int64_t items =
      std::max(axial_pass_items(bh, segment, rows, 0), axial_pass_items(bh, segment, rows, 1));
  return make_attention_scratch(items, axial_floats(segment, rows, q.dim(3), v.dim(3)), pool, 4,
                                at.has_direct_state ? 0 : bh * n);
}

Status cpu_axial_attention_f32_avx2(const KernelArgs& args) {
  return run_axial(args, &axial_attention_items_f32_avx2);
}
Status cpu_axial_attention_f32_avx512(const KernelArgs& args) {
  return run_axial(args, &axial_attention_items_f32_avx512);
}

Status cpu_attention_f32_avx2(const KernelArgs& args) {
  return run_attention(args, &attention_items_f32_avx2);
}
Status cpu_attention_f32_avx512(const KernelArgs& args) {
  return run_attention(args, &attention_items_f32_avx512);
}

}  // namespace longrun::cpu
