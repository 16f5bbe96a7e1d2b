// Reference kernels of attention (dense, fused), sparse_attention (keys gathered by index)
// and axial_attention (own row's keys + one slot per row of the own column). All materialise
// one row of logits per query, in double:
//   y[b,h,i,:] = sum over visible keys j of softmax_j(scale * q_i . k_j) * v_j
// and a query with no visible key gets zeros. Masked keys are skipped outright (never
// multiplied by a zero weight), so a non-finite value behind a mask cannot leak in.
// bf16 k and v (attention, sparse_attention) are read through ref::load, which widens each
// element exactly; the arithmetic is the same double arithmetic as for f32.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "longrun/ops/schema.h"
#include "reference/access.h"

namespace longrun {
namespace {

int64_t at4(const TensorDesc& d, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return i0 * d.stride(0) + i1 * d.stride(1) + i2 * d.stride(2) + i3 * d.stride(3);
}

double dot_qk(const TensorView& q, const TensorView& k, int64_t b, int64_t h, int64_t i, int64_t j) {
  double acc = 0.0;
  for (int64_t d = 0; d < q.desc.dim(3); ++d)
    acc += ref::load(q, at4(q.desc, b, h, i, d)) * ref::load(k, at4(k.desc, b, h, j, d));
  return acc;
}

// Softmax over `logits` (one per key in `keys`), then y[b,h,i,:] = sum_s w_s vals[s][b,h,keys_s,:]
// (axial_attention mixes two value tensors). An empty key list gives zeros.
void softmax_times_values(std::vector<double>& logits, const std::vector<int64_t>& keys,
                          const std::vector<const TensorView*>& vals, const TensorView& out, int64_t b,
                          int64_t h, int64_t i) {
  ref::softmax_in_place(logits);
  for (int64_t e = 0; e < out.desc.dim(3); ++e) {
    double acc = 0.0;
    for (size_t s = 0; s < keys.size(); ++s)
      acc += logits[s] * ref::load(*vals[s], at4(vals[s]->desc, b, h, keys[s], e));
    ref::store(out, at4(out.desc, b, h, i, e), acc);
  }
}
void softmax_times_v(std::vector<double>& logits, const std::vector<int64_t>& keys, const TensorView& v,
                     const TensorView& out, int64_t b, int64_t h, int64_t i) {
  softmax_times_values(logits, keys, std::vector<const TensorView*>(keys.size(), &v), out, b, h, i);
}

}  // namespace

Status reference_attention(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::attention, args));
  const AttentionAttrs& at = args.attr<AttentionAttrs>();
  const TensorView& q = args.inputs[0];
  const TensorView& k = args.inputs[1];
  const TensorView& v = args.inputs[2];
  const TensorView* pad = at.has_key_padding_mask ? &args.inputs[3] : nullptr;
  const TensorView& out = args.outputs[0];
  const TensorView* lse = at.with_lse ? &args.outputs[1] : nullptr;
  const int64_t B = q.desc.dim(0), H = q.desc.dim(1), Nq = q.desc.dim(2), Nk = k.desc.dim(2);

  std::vector<double> logits;
  std::vector<int64_t> keys;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Nq; ++i) {
        logits.clear();
        keys.clear();
        for (int64_t j = 0; j < Nk; ++j) {
          // Any non-zero mask byte means "attend" (1 is the documented value).
          if (pad != nullptr && ref::load_int(*pad, b * pad->desc.stride(0) + j * pad->desc.stride(1)) == 0)
            continue;
          if (at.causal && j > i + (Nk - Nq)) continue;
          keys.push_back(j);
          logits.push_back(double(at.scale) * dot_qk(q, k, b, h, i, j));
        }
        if (lse != nullptr) {
          double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
          for (double x : logits) mx = std::max(mx, x);
          for (double x : logits) sum += std::exp(x - mx);
          ref::store(*lse, i * lse->desc.stride(2) + h * lse->desc.stride(1) + b * lse->desc.stride(0),
                     logits.empty() ? -std::numeric_limits<double>::infinity() : mx + std::log(sum));
        }
        softmax_times_v(logits, keys, v, out, b, h, i);
      }
  return {};
}

Status reference_sparse_attention(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::sparse_attention, args));
  const double scale = args.attr<SparseAttentionAttrs>().scale;
  const TensorView& q = args.inputs[0];
  const TensorView& k = args.inputs[1];
  const TensorView& v = args.inputs[2];
  const TensorView& ix = args.inputs[3];
  const TensorView& out = args.outputs[0];
  const int64_t B = q.desc.dim(0), H = q.desc.dim(1), Nq = q.desc.dim(2), Nk = k.desc.dim(2);
  const int64_t kk = ix.desc.dim(3);

  // Indices are data: check them all before writing, and name the first bad one.
  Status st;
  ref::for_each_index(ix.desc.dims(), [&](std::span<const int64_t> p) {
    const int64_t j = ref::load_int(ix, ref::offset_of(ix.desc, p));
    if (st.ok() && (j < -1 || j >= Nk))
      st = out_of_range("sparse_attention: input 3 (indices " + ix.desc.to_string() + ") at " +
                        ref::index_string(p) + ": index " + std::to_string(j) + " out of range [-1, " +
                        std::to_string(Nk) + ")");
  });
  LR_RETURN_IF_ERROR(st);

  std::vector<double> logits;
  std::vector<int64_t> keys;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Nq; ++i) {
        // indices broadcast over batch and heads when their dim there is 1.
        const int64_t ib = ix.desc.dim(0) == 1 ? 0 : b, ih = ix.desc.dim(1) == 1 ? 0 : h;
        logits.clear();
        keys.clear();
        for (int64_t s = 0; s < kk; ++s) {
          const int64_t j = ref::load_int(ix, at4(ix.desc, ib, ih, i, s));
          if (j == -1) continue;  // unused slot
          keys.push_back(j);      // a repeated index stays: it counts once per occurrence
          logits.push_back(scale * dot_qk(q, k, b, h, i, j));
        }
        softmax_times_v(logits, keys, v, out, b, h, i);
      }
  return {};
}

Status reference_axial_attention(const KernelArgs& args) {
  LR_RETURN_IF_ERROR(ref::check_kernel_args(OpKind::axial_attention, args));
  const AxialAttentionAttrs& at = args.attr<AxialAttentionAttrs>();
  const TensorView& q = args.inputs[0];
  const TensorView& k = args.inputs[1];  // has_direct_state: y0
  const TensorView& v = args.inputs[2];  // has_direct_state: lse0
  const TensorView& ks = args.inputs[3];
  const TensorView& vs = args.inputs[4];
  const TensorView* pad = at.has_key_padding_mask ? &args.inputs[5] : nullptr;
  const TensorView& out = args.outputs[0];
  const int64_t B = q.desc.dim(0), H = q.desc.dim(1), N = q.desc.dim(2), s = at.segment, n = N / s;
  auto real = [&](int64_t b, int64_t pos) {
    return pad == nullptr || ref::load_int(*pad, b * pad->desc.stride(0) + pos * pad->desc.stride(1)) != 0;
  };

  std::vector<double> logits;
  std::vector<int64_t> keys;
  std::vector<const TensorView*> vals;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < N; ++i) {
        const int64_t u = i / s, t = i % s;
        logits.clear();
        keys.clear();
        vals.clear();
        if (at.has_direct_state) {
          // The direct keys' softmax is one slot: logit lse0 (already scaled), value y0.
          const double lse = ref::load(v, b * v.desc.stride(0) + h * v.desc.stride(1) + i * v.desc.stride(2));
          if (lse != -std::numeric_limits<double>::infinity()) {
            keys.push_back(i);
            vals.push_back(&k);
            logits.push_back(lse);
          }
        }
        for (int64_t j = 0; j < s && !at.has_direct_state; ++j) {  // direct keys: the own row
          const int64_t pos = u * s + j;
          if (!real(b, pos) || (at.causal && j > t)) continue;
          keys.push_back(pos);
          vals.push_back(&v);
          logits.push_back(double(at.scale) * dot_qk(q, k, b, h, i, pos));
        }
        for (int64_t r = 0; r < n; ++r) {  // column slots: one per row of the own column
          const int64_t pos = r * s + t;
          if (!real(b, pos) || (at.causal && r >= u)) continue;
          keys.push_back(pos);
          vals.push_back(&vs);
          logits.push_back(double(at.scale) * dot_qk(q, ks, b, h, i, pos));
        }
        softmax_times_values(logits, keys, vals, out, b, h, i);
      }
  return {};
}

}  // namespace longrun
