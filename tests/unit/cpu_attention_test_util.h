// What the cpu attention unit tests (cpu_attention_test.cpp, cpu_attention_lse_test.cpp)
// share: named host inputs, a graph run on a backend at one ISA level and thread count, the
// ISA levels this machine has, the reference kernels on host buffers, and random dense
// attention data (q, k, v, key padding mask) of one shape.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "longrun/ops/schema.h"
#include "longrun/session.h"

namespace longrun::attention_tests {

// A graph input: its name, desc and the host data it reads.
struct Input {
  std::string name;
  TensorDesc desc;
  const void* data;
};

// `isas` (e.g. {"scalar"}) followed by the vector ISA levels with their own kernels (avx2,
// avx512) that this machine runs; a MESSAGE from `tests` says when one is missing.
inline std::vector<std::string> with_vector_isas(std::vector<std::string> isas, const char* tests) {
  const size_t given = isas.size();
  for (const char* isa : {"avx2", "avx512"})
    if (create_backend("cpu", {.threads = 1, .isa = isa}).ok()) isas.push_back(isa);
  if (isas.size() < given + 2)
    MESSAGE(tests, " tests: this machine lacks some ISA levels; tested: ", isas.size());
  return isas;
}

// One graph input per Input, in order.
inline std::vector<ValueId> add_inputs(GraphBuilder& b, const std::vector<Input>& ins) {
  std::vector<ValueId> ids;
  for (const Input& in : ins) ids.push_back(b.input(in.name, in.desc));
  return ids;
}

// Runs `session` on the inputs read from `ins`.
inline Result<std::vector<NamedTensor>> run_inputs(Session& session, const std::vector<Input>& ins) {
  std::vector<NamedTensorRef> refs;
  for (const Input& in : ins) refs.push_back({in.name, TensorView{in.desc, const_cast<void*>(in.data)}});
  return session.run(refs);
}

// Runs `g` on `backend` at `isa` with `threads`, the inputs read from `ins`.
inline Result<std::vector<NamedTensor>> run_graph(Graph g, const std::vector<Input>& ins,
                                                  const std::string& backend, const std::string& isa,
                                                  int threads) {
  auto s = Session::create(std::move(g), {.backend = backend, .threads = threads, .isa = isa});
  if (!s.ok()) return s.status();
  return run_inputs(**s, ins);
}

inline std::vector<float> values_of(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.desc().numel());
}

// The reference kernel of `kind` (attention or sparse_attention) on host buffers, writing
// `outs`.
inline Status run_reference_kernel(OpKind kind, const OpAttrs& attrs, const std::vector<Input>& ins,
                                   std::span<const TensorView> outs) {
  std::vector<TensorView> in_views;
  for (const Input& in : ins) in_views.push_back(TensorView{in.desc, const_cast<void*>(in.data)});
  KernelArgs args;
  args.attrs = &attrs;
  args.inputs = in_views;
  args.outputs = outs;
  return kind == OpKind::attention ? reference_attention(args) : reference_sparse_attention(args);
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline std::vector<float> uniform(std::mt19937& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = d(rng);
  return x;
}

// The shape of a dense attention case: q [B, H, Nq, hd], k [B, H, Nk, hd], v [B, H, Nk, hv],
// key padding mask [B, Nk], y [B, H, Nq, hv]. Printed by CAPTURE.
struct AttentionShape {
  int64_t B, H, Nq, Nk, hd, hv;
};

inline std::ostream& operator<<(std::ostream& os, const AttentionShape& s) {
  return os << "B " << s.B << " H " << s.H << " Nq " << s.Nq << " Nk " << s.Nk << " hd " << s.hd << " hv "
            << s.hv;
}

// Random dense attention data of one shape.
struct DenseData {
  TensorDesc qd, kd, vd, md, yd;
  std::vector<float> q, k, v;
  std::vector<uint8_t> mask;

  // "q", "k", "v" and, with_mask, "mask".
  std::vector<Input> inputs(bool with_mask) const {
    std::vector<Input> ins{{"q", qd, q.data()}, {"k", kd, k.data()}, {"v", vd, v.data()}};
    if (with_mask) ins.push_back({"mask", md, mask.data()});
    return ins;
  }
};

// Draws, in this order: q uniform in [-q_range, q_range], k and v in [-kv_range, kv_range],
// and the key padding mask (each key kept with probability `keep`; with B > 1 every key of
// batch 1 padded, so all its queries see none).
inline DenseData random_dense(const AttentionShape& s, std::mt19937& rng, float q_range, float kv_range,
                              double keep) {
  DenseData d{.qd = TensorDesc(DType::f32, {s.B, s.H, s.Nq, s.hd}),
              .kd = TensorDesc(DType::f32, {s.B, s.H, s.Nk, s.hd}),
              .vd = TensorDesc(DType::f32, {s.B, s.H, s.Nk, s.hv}),
              .md = TensorDesc(DType::u8, {s.B, s.Nk}),
              .yd = TensorDesc(DType::f32, {s.B, s.H, s.Nq, s.hv})};
  d.q = uniform(rng, d.qd.numel(), -q_range, q_range);
  d.k = uniform(rng, d.kd.numel(), -kv_range, kv_range);
  d.v = uniform(rng, d.vd.numel(), -kv_range, kv_range);
  d.mask.resize(size_t(d.md.numel()));
  std::bernoulli_distribution kept(keep);
  for (auto& m : d.mask) m = kept(rng) ? 1 : 0;
  if (s.B > 1) std::fill(d.mask.begin() + s.Nk, d.mask.begin() + 2 * s.Nk, uint8_t(0));
  return d;
}

}  // namespace longrun::attention_tests
