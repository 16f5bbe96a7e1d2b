// The cpu backend's fused attention and sparse_attention kernels (f32, AVX2 and AVX-512;
// K and V may be bf16, widened exactly to f32 as they are read).
//
// attention: flash-style. A work item is one (batch, head, block of kAttnBlockQ queries);
// it walks the visible keys in blocks of kAttnBlockK, computes S = scale * Q K^T for the
// block, updates a running max and sum per query (online softmax) and accumulates P V,
// rescaling the accumulator when the max grows. Nothing of size Nq x Nk is ever stored:
// the scratch of one item is O((Nq-block + Nk-block) * (hd + hv)) plus one key list.
// sparse_attention: per query, the kk listed keys are gathered, their logits computed 16
// (or 8) at a time, softmaxed and the gathered V rows summed: O(Nq * kk * (hd + hv)).
//
// Threading: items are split into the pool's deterministic chunks; each chunk owns a
// scratch buffer made by the prepare step. A query row's result never depends on which
// chunk or thread computed it, so any thread count gives bitwise-identical outputs.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/host/host_executor.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu {

// Block sizes shared by both ISAs (the scratch layout depends on them).
inline constexpr int kAttnBlockQ = 64;  // queries per work item: 4 AVX-512 / 8 AVX2 vectors
inline constexpr int kAttnBlockK = 64;  // keys per online-softmax step

// One attention or sparse_attention call, resolved to raw pointers. Strides are in
// elements for dims 0..2; dim 3 (hd or hv, kk) is contiguous (stride 1) for q, k, v, y.
struct AttentionProblem {
  const float* q = nullptr;
  const float* k = nullptr;  // f32 K and V; null when they are bf16
  const float* v = nullptr;
  const uint16_t* k16 = nullptr;  // bf16 K and V (attention, sparse_attention); else null
  const uint16_t* v16 = nullptr;
  float* y = nullptr;
  const uint8_t* mask = nullptr;  // attention: key padding mask [B, Nk], null when absent
  const int32_t* idx = nullptr;   // sparse_attention: indices [B|1, H|1, Nq, kk]
  int64_t B = 0, H = 0, Nq = 0, Nk = 0, hd = 0, hv = 0, kk = 0;
  int64_t qs[3] = {}, ks[3] = {}, vs[3] = {}, ys[3] = {};
  int64_t ms[2] = {};  // mask strides
  int64_t is[4] = {};  // index strides; is[0] / is[1] are 0 where indices broadcast
  float scale = 1.0f;
  bool causal = false;
  int64_t causal_offset = 0;  // causal: key j is visible to query i iff j <= i + causal_offset
  // Dense items only: the running-softmax state of each query, indexed like q by (b, h, i)
  // with strides ls. With lse_in, an item continues from the normalised output already in y
  // and its log-sum-exp lse_in (-inf: nothing seen yet); with lse_out, it stores the new one.
  // y_in (strides yis): where the continued output is read, when not y itself.
  const float* lse_in = nullptr;
  float* lse_out = nullptr;
  int64_t ls[3] = {};
  const float* y_in = nullptr;
  int64_t yis[3] = {};
};

// Both ops' q [B, H, Nq, hd], k [B, H, Nk, hd], v [B, H, Nk, hv] and y [B, H, Nq, hv] into p:
// sizes, pointers and strides. False when any is not of rank 4 with rows of stride 1, q or y
// is not f32, k and v are not both f32 or both bf16 (then k16 / v16 are set), or k, v or y
// disagree with q's B, H, Nq and k's Nk.
bool take_qkvy(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& y,
               AttentionProblem* p);

// axial_attention: the problem as [B, H, N, .] views (q, k, v, y, mask as in AttentionProblem;
// ksum / vsum the column-slot keys and values) and its two passes. Pass 0 runs the direct
// keys of every row (items (b, h, row u, query block)) and stores each query's log-sum-exp
// in lse [B, H, N]; pass 1 runs the column slots of every column (items (b, h, column t,
// query block)) and continues each query's softmax from pass 0's y and lse. With a given
// direct state (has_direct_state) only pass 1 runs, continuing from y0 and lse0.
struct AxialProblem {
  AttentionProblem whole;
  const float* ksum = nullptr;
  const float* vsum = nullptr;
  int64_t kss[3] = {}, vss[3] = {};
  int64_t segment = 1, rows = 1;  // N = rows * segment
  float* lse = nullptr;           // pass 0's output: [B, H, N] contiguous
  const float* y0 = nullptr;      // has_direct_state: y0 and lse0 (else null)
  const float* lse0 = nullptr;
  int64_t y0s[3] = {}, lse0s[3] = {};
};
int64_t axial_items(const AxialProblem& a, int pass);
using AxialItemsFn = void (*)(const AxialProblem& a, int pass, int64_t begin, int64_t end, float* scratch);
void axial_attention_items_f32_avx2(const AxialProblem& a, int pass, int64_t begin, int64_t end,
                                    float* scratch);
void axial_attention_items_f32_avx512(const AxialProblem& a, int pass, int64_t begin, int64_t end,
                                      float* scratch);

// The per-chunk scratch of a dense attention call, carved from one float buffer. kp (bf16
// K only, else 0 floats): the key block's K rows widened to f32, rows of attention_hd_pad(hd).
struct AttentionScratchLayout {
  int64_t qt = 0, s = 0, o = 0, vp = 0, m = 0, l = 0, alpha = 0, keys = 0, nvis = 0,
          kp = 0;      // offsets, floats
  int64_t floats = 0;  // per chunk
};
AttentionScratchLayout attention_scratch_layout(int64_t Nk, int64_t hd, int64_t hv, bool kv_bf16 = false);
// hd rounded up to a multiple of 16 (a widened K row's length in the kp scratch).
inline int64_t attention_hd_pad(int64_t hd) { return (hd + 15) / 16 * 16; }
// hv rounded up to a multiple of 16 (the packed V and accumulator row length).
inline int64_t attention_hv_pad(int64_t hv) { return (hv + 15) / 16 * 16; }

// The ISA kernels: run work items [begin, end) with one chunk's scratch. Dense items are
// (b, h, query block) in that order; sparse items are (b, h, query block) of
// sparse_attention.h.
// They return false on invalid data (a sparse index outside [-1, Nk)); outputs are then
// unspecified and the caller reports the error.
using AttentionItemsFn = bool (*)(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch);
bool attention_items_f32_avx2(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch);
bool attention_items_f32_avx512(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch);
bool sparse_attention_items_f32_avx2(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch);
bool sparse_attention_items_f32_avx512(const AttentionProblem& p, int64_t begin, int64_t end, float* scratch);

// Shared by both ops: the scratch a prepare step makes (one buffer of `floats` per chunk of
// the pool's deterministic split of `items` into at most chunks_per_thread chunks per
// thread), and the run that hands each chunk its items and its buffer. Without prepared
// state, or with one too small, the run allocates its own. Returns false when any chunk did.
// Fused attention splits finely (4 per thread, small buffers, uneven items); a sparse
// attention chunk holds one block's softmax weights (256 KB, or up to 4 MB for whole
// heads), so it takes one chunk per thread (sparse_attention.h).
Result<std::shared_ptr<void>> make_attention_scratch(int64_t items, int64_t floats, ThreadPool* pool,
                                                     int chunks_per_thread = 4, int64_t extra_floats = 0);
bool run_attention_items(const KernelArgs& args, const AttentionProblem& p, int64_t items, int64_t floats,
                         AttentionItemsFn fn, int chunks_per_thread = 4);
// The extra_floats of the run's prepared scratch (after its chunk buffers, which
// run_attention_items uses) when there are at least `floats` of them; else null.
float* prepared_attention_extra(const KernelArgs& args, int64_t floats);

// Kernel entry points (kernels.inc). Views the kernels do not vectorise (a dim-3 stride
// other than 1) go to the reference kernel; so do invalid indices (found while running),
// for its error message.
Status cpu_attention_f32_avx2(const KernelArgs& args);
Status cpu_attention_f32_avx512(const KernelArgs& args);
Status cpu_sparse_attention_f32_avx2(const KernelArgs& args);
Status cpu_sparse_attention_f32_avx512(const KernelArgs& args);
// sparse_attention in bf16 sessions (pick_cpu): f32 K and V are rounded to bf16 once per run
// (sparse_attention.h) and the bf16 kernel runs on the copies; bf16 K and V run as given.
Status cpu_sparse_attention_bf16_avx2(const KernelArgs& args);
Status cpu_sparse_attention_bf16_avx512(const KernelArgs& args);
Status cpu_axial_attention_f32_avx2(const KernelArgs& args);
Status cpu_axial_attention_f32_avx512(const KernelArgs& args);

// Prepare steps: one scratch buffer per parallel chunk, sized from the node's shapes.
// A run without prepared state (a direct call, e.g. from a unit test) allocates its own.
Result<std::shared_ptr<void>> prepare_attention(const Graph& graph, const Node& node, ThreadPool* pool);
Result<std::shared_ptr<void>> prepare_sparse_attention(const Graph& graph, const Node& node,
                                                       ThreadPool* pool);
Result<std::shared_ptr<void>> prepare_sparse_attention_bf16(const Graph& graph, const Node& node,
                                                            ThreadPool* pool);
Result<std::shared_ptr<void>> prepare_axial_attention(const Graph& graph, const Node& node, ThreadPool* pool);

inline constexpr host::HostKernel cpu_attention_f32_avx2_with_prepare{cpu_attention_f32_avx2,
                                                                      prepare_attention};
inline constexpr host::HostKernel cpu_attention_f32_avx512_with_prepare{cpu_attention_f32_avx512,
                                                                        prepare_attention};
inline constexpr host::HostKernel cpu_sparse_attention_f32_avx2_with_prepare{cpu_sparse_attention_f32_avx2,
                                                                             prepare_sparse_attention};
inline constexpr host::HostKernel cpu_sparse_attention_f32_avx512_with_prepare{
    cpu_sparse_attention_f32_avx512, prepare_sparse_attention};
inline constexpr host::HostKernel cpu_sparse_attention_bf16_avx2_with_prepare{cpu_sparse_attention_bf16_avx2,
                                                                              prepare_sparse_attention_bf16};
inline constexpr host::HostKernel cpu_sparse_attention_bf16_avx512_with_prepare{
    cpu_sparse_attention_bf16_avx512, prepare_sparse_attention_bf16};
inline constexpr host::HostKernel cpu_axial_attention_f32_avx2_with_prepare{cpu_axial_attention_f32_avx2,
                                                                            prepare_axial_attention};
inline constexpr host::HostKernel cpu_axial_attention_f32_avx512_with_prepare{cpu_axial_attention_f32_avx512,
                                                                              prepare_axial_attention};

}  // namespace longrun::cpu
