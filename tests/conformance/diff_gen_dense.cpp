// Differential cases of the dense ops: matmul (GEMM tiles, K blocks, transposes, epilogue,
// batch broadcasting, f16/bf16 weights), layer_norm, softmax (masks, causal, fully masked
// rows) and embedding.
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "conformance/diff_case.h"

namespace longrun::conformance::diff {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<int64_t> cat(std::vector<int64_t> a, std::initializer_list<int64_t> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Mm {
  int64_t M = 1, N = 1, K = 1;
  bool ta = false, tb = false;
  std::vector<int64_t> batch_a, batch_b, batch_c;
  DType bt = DType::f32;
  bool bias = false, c = false;
  float alpha = 1.0f, beta = 1.0f;
  Activation act = Activation::none;
  Fill fill = kUniform;
};

const char* act_name(Activation a) {
  switch (a) {
    case Activation::none: return "";
    case Activation::relu: return "_relu";
    case Activation::gelu: return "_gelu";
    case Activation::gelu_tanh: return "_gelutanh";
  }
  return "";
}

// `b_scale` multiplies B: large A values against small B values keep the products O(1),
// where the element bound (absolute below 1, relative above) means what tolerances.cpp
// says; large products with cancellation would need a bound relative to sum |a b|.
void add_mm(CaseList& L, const std::string& tag, const Mm& m, double b_scale = 1.0) {
  Rng& r = L.rng();
  MatmulAttrs a{.trans_a = m.ta,
                .trans_b = m.tb,
                .alpha = m.alpha,
                .beta = m.beta,
                .has_bias = m.bias,
                .has_c = m.c,
                .activation = m.act};
  std::vector<HostTensor> in;
  in.push_back(random(r, DType::f32, m.ta ? cat(m.batch_a, {m.K, m.M}) : cat(m.batch_a, {m.M, m.K}), m.fill));
  in.push_back(random(r, m.bt, m.tb ? cat(m.batch_b, {m.N, m.K}) : cat(m.batch_b, {m.K, m.N}), m.fill));
  if (b_scale != 1.0)
    for (int64_t e = 0; e < in[1].desc.numel(); ++e) set(in[1], e, get(in[1], e) * b_scale);
  if (m.bias) in.push_back(random(r, DType::f32, {m.N}));
  if (m.c) in.push_back(random(r, DType::f32, cat(m.batch_c, {m.M, m.N})));
  std::string name = tag + "_m" + std::to_string(m.M) + "n" + std::to_string(m.N) + "k" + std::to_string(m.K);
  if (!m.batch_a.empty()) name += "_ba" + dims_name(m.batch_a);
  if (!m.batch_b.empty()) name += "_bb" + dims_name(m.batch_b);
  if (m.ta) name += "_ta";
  if (m.tb) name += "_tb";
  if (m.bt != DType::f32) name += "_" + std::string(dtype_name(m.bt));
  if (m.bias) name += "_bias";
  if (m.c) name += "_c" + (m.batch_c.empty() ? std::string() : dims_name(m.batch_c));
  if (m.alpha != 1.0f) name += "_alpha";
  name += act_name(m.act);
  L.add(name, a, std::move(in));
}

}  // namespace

void generate_matmul(CaseList& L) {
  // Sweeps of one dimension across the tile and vector widths, the others odd.
  int i = 0;
  for (int64_t s : kSizes) {
    add_mm(L, "sweep_m", {.M = s, .N = 17, .K = 33, .tb = i % 2 == 1, .bias = i % 3 == 0});
    add_mm(L, "sweep_n", {.M = 7, .N = s, .K = 16, .tb = i % 2 == 0, .bias = i % 3 == 1});
    add_mm(L, "sweep_k", {.M = 9, .N = 31, .K = s, .tb = i % 2 == 1});
    add_mm(L, "cube", {.M = s, .N = s, .K = s, .tb = i % 2 == 0, .bias = true});
    ++i;
  }
  for (size_t p = 0; p + 2 < std::size(kPrimes); ++p)
    add_mm(L, "primes", {.M = kPrimes[p], .N = kPrimes[p + 1], .K = kPrimes[p + 2], .tb = p % 2 == 0});
  // Every transpose combination with each epilogue term.
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    add_mm(L, "trans", {.M = 13, .N = 37, .K = 61, .ta = ta, .tb = tb});
    add_mm(L, "trans",
           {.M = 13, .N = 37, .K = 61, .ta = ta, .tb = tb, .bias = true, .c = true, .beta = -0.5f});
    add_mm(L, "trans", {.M = 13, .N = 37, .K = 61, .ta = ta, .tb = tb, .alpha = 0.25f});
  }
  for (Activation act : {Activation::relu, Activation::gelu, Activation::gelu_tanh}) {
    add_mm(L, "act", {.M = 33, .N = 65, .K = 31, .tb = true, .bias = true, .act = act});
    add_mm(L, "act", {.M = 6, .N = 16, .K = 7, .c = true, .beta = 2.0f, .act = act});
  }
  add_mm(L, "alpha0", {.M = 5, .N = 9, .K = 17, .bias = true, .alpha = 0.0f});
  // f16/bf16 weights (widened inside the kernel; prepacked when bound as weights).
  for (DType bt : {DType::f16, DType::bf16})
    for (bool tb : {false, true}) {
      add_mm(L, "half", {.M = 17, .N = 33, .K = 65, .tb = tb, .bt = bt, .bias = true});
      add_mm(L, "half", {.M = 64, .N = 128, .K = 64, .tb = tb, .bt = bt});
      add_mm(L, "half", {.M = 5, .N = 16, .K = 300, .tb = tb, .bt = bt, .act = Activation::gelu});
    }
  // Batch broadcasting of A, B and C.
  add_mm(L, "batch", {.M = 9, .N = 17, .K = 8, .batch_a = {2, 3}});
  add_mm(L, "batch", {.M = 9, .N = 17, .K = 8, .tb = true, .batch_b = {2}});
  add_mm(L, "batch", {.M = 5, .N = 16, .K = 33, .batch_a = {2, 1}, .batch_b = {1, 3}, .bias = true});
  add_mm(L, "batch", {.M = 7, .N = 9, .K = 15, .batch_a = {3}, .batch_b = {3}, .c = true});
  add_mm(L, "batch", {.M = 7, .N = 9, .K = 15, .batch_a = {2, 1}, .batch_c = {2, 3}, .c = true});
  add_mm(L, "batch",
         {.M = 4, .N = 32, .K = 16, .tb = true, .batch_a = {2, 2}, .batch_b = {2, 2}, .bt = DType::f16});
  // K across cache blocks, matrix-vector shapes.
  // K across the 384-deep cache block (once and twice), M across the 72- (AVX2) and
  // 168-row (AVX-512) row blocks, N beyond the 4096-column task width, and a batched B
  // over the 16 MiB per-run packing cap (packed batch by batch).
  for (int64_t k : {255, 256, 257, 383, 384, 385, 600, 769})
    add_mm(L, "kblock", {.M = 19, .N = 40, .K = k, .tb = k % 2 == 0, .bias = true});
  for (int64_t m : {71, 72, 73, 167, 168, 169, 337})
    add_mm(L, "mblock", {.M = m, .N = 33, .K = 20, .tb = m % 2 == 1, .c = m % 3 == 0});
  add_mm(L, "nwide", {.M = 3, .N = 4100, .K = 9, .bias = true});
  add_mm(L, "bigb", {.M = 2, .N = 1024, .K = 1024, .tb = true, .batch_b = {5}});
  // A rows 4 / 8 KiB apart alias in L1, so A is packed although contiguous along k.
  add_mm(L, "alias", {.M = 31, .N = 130, .K = 2048, .bias = true});
  add_mm(L, "alias", {.M = 29, .N = 128, .K = 1024, .tb = true, .c = true, .act = Activation::gelu});
  // Attention's P·V (A and B read in place, N = 64: the AVX-512 6 x 64 tile): row counts
  // with every partial tile, K over several of its short blocks (K <= 512: uneven ones too)
  // and over 512-deep ones, batches, the epilogue terms.
  add_mm(L, "pv", {.M = 67, .N = 64, .K = 600, .batch_a = {2}, .batch_b = {2}});
  add_mm(L, "pv", {.M = 13, .N = 64, .K = 300, .batch_a = {3}, .batch_b = {3}});
  add_mm(L, "pv",
         {.M = 11, .N = 64, .K = 70, .bias = true, .c = true, .beta = 0.5f, .act = Activation::gelu});
  add_mm(L, "pv", {.M = 4, .N = 64, .K = 1030, .alpha = 0.125f});
  add_mm(L, "matvec", {.M = 512, .N = 1, .K = 256, .tb = true});
  add_mm(L, "vecmat", {.M = 1, .N = 512, .K = 256, .tb = true, .bias = true});
  add_mm(L, "k1", {.M = 33, .N = 17, .K = 1});
  // Adversarial values: signed zeros, ties, subnormals, magnitudes up to 1e3.
  add_mm(L, "finite", {.M = 31, .N = 33, .K = 64, .tb = true, .bias = true, .fill = kFinite});
  add_mm(L, "scaled", {.M = 16, .N = 17, .K = 100, .fill = {-1e3, 1e3}}, 1e-6);
  add_mm(L, "exact", {.M = 23, .N = 48, .K = 50, .fill = {-4, 4, 0.2, 0, 0, 0, 0, 0, 0.5}});
  // Model-shaped: a projection of 257 tokens, an FFN slice with an f16 weight.
  add_mm(L, "model", {.M = 257, .N = 256, .K = 256, .tb = true, .bias = true, .act = Activation::gelu});
  add_mm(L, "model", {.M = 128, .N = 512, .K = 128, .tb = true, .bt = DType::f16, .bias = true});
  add_mm(L, "model", {.M = 512, .N = 64, .K = 512, .tb = true, .bias = true});
}

void generate_layer_norm(CaseList& L) {
  Rng& r = L.rng();
  auto add = [&](const std::string& tag, std::vector<int64_t> dims, double offset, double spread, DType wt,
                 float eps = 1e-5f) {
    const int64_t D = dims.back();
    HostTensor x = random(r, DType::f32, dims, {offset - spread, offset + spread});
    std::vector<HostTensor> in{x, random(r, wt, {D}, {0.5, 1.5}), random(r, wt, {D}, {-0.5, 0.5})};
    L.add(tag + "_" + dims_name(dims) + (wt == DType::f32 ? "" : "_" + std::string(dtype_name(wt))),
          LayerNormAttrs{.eps = eps}, std::move(in));
  };
  int i = 0;
  for (int64_t d : kSizes) add("d", {i++ % 2 ? 3 : 1, d}, 0.0, 1.0, DType::f32);
  for (int64_t d : kPrimes) add("prime", {2, d}, 0.5, 2.0, DType::f32);
  for (DType wt : {DType::f16, DType::bf16}) {
    add("half", {4, 33}, 0.0, 1.0, wt);
    add("half", {2, 3, 64}, 1.0, 1.0, wt);
  }
  // |mean| up to 8 against a unit-scale spread, the tolerance's stated domain: an f32 mean
  // is off by ~eps |mean|, which normalisation scales by 1/std, so no correct f32 kernel
  // can promise the bound for |mean| / std far beyond ~8.
  add("offset", {5, 65}, 8.0, 2.0, DType::f32);
  add("offset", {3, 128}, -6.0, 1.5, DType::f32);
  add("wide", {2, 17}, 0.0, 100.0, DType::f32);
  add("eps_small", {3, 31}, 0.0, 1.0, DType::f32, 1e-12f);
  add("eps0", {3, 16}, 0.0, 1.0, DType::f32, 0.0f);
  add("rank1", {100}, 0.0, 1.0, DType::f32);
  // Constant rows: variance 0 (eps keeps the scale finite), output = beta.
  {
    HostTensor x = zeros(DType::f32, {3, 40});
    for (int64_t e = 0; e < 120; ++e) set(x, e, e < 80 ? 0.75 : -2.0);
    L.add("constant_rows", LayerNormAttrs{}, {x, random(r, DType::f32, {40}), random(r, DType::f32, {40})});
  }
  add("model", {64, 768}, 0.0, 1.0, DType::f32);
  add("model", {512, 512}, 0.2, 1.0, DType::f32);
}

void generate_softmax(CaseList& L) {
  Rng& r = L.rng();
  const Fill wide{-5, 5};
  int i = 0;
  for (int64_t n : kSizes) {
    L.add("n_" + dims_name({3, n}), SoftmaxAttrs{.scale = i++ % 2 ? 0.125f : 1.0f},
          {random(r, DType::f32, {3, n}, wide)});
  }
  for (int64_t n : kPrimes)
    L.add("prime_" + std::to_string(n), SoftmaxAttrs{}, {random(r, DType::f32, {2, n}, wide)});
  for (int64_t n : {255, 256, 257, 1000})
    L.add("long_" + std::to_string(n), SoftmaxAttrs{}, {random(r, DType::f32, {2, n}, wide)});
  L.add("long_4096", SoftmaxAttrs{.scale = 0.5f}, {random(r, DType::f32, {1, 4096}, wide)});
  // Large logits (exp range), -inf entries, a row of only -inf (zeros), negative scale.
  L.add("big_logits", SoftmaxAttrs{}, {random(r, DType::f32, {4, 33}, {-80, 80})});
  {
    HostTensor x = random(r, DType::f32, {4, 37}, {-3, 3, 0, 0.1, 0, 0, 0, 0.2});
    for (int64_t j = 0; j < 37; ++j) set(x, int64_t(2) * 37 + j, kNegInf);
    L.add("neg_inf", SoftmaxAttrs{}, {x});
  }
  L.add("neg_scale", SoftmaxAttrs{.scale = -2.0f}, {random(r, DType::f32, {3, 17}, wide)});
  // Non-last axes.
  L.add("axis1", SoftmaxAttrs{.axis = 1}, {random(r, DType::f32, {4, 17, 3}, wide)});
  L.add("axis0", SoftmaxAttrs{.axis = 0}, {random(r, DType::f32, {9, 16}, wide)});
  L.add("axis_m2", SoftmaxAttrs{.axis = -2}, {random(r, DType::f32, {2, 33, 5}, wide)});
  // Causal: square, more columns than rows (decode), more rows than columns (the first
  // rows see nothing: zeros), batched.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{17, 17}, {5, 33}, {33, 5}, {1, 9}, {64, 64}})
    L.add("causal_" + dims_name({rows, cols}), SoftmaxAttrs{.causal = true},
          {random(r, DType::f32, {rows, cols}, wide)});
  L.add("causal_batched", SoftmaxAttrs{.scale = 0.125f, .causal = true},
        {random(r, DType::f32, {2, 3, 9, 16}, wide)});
  // Additive masks broadcast from [C], [R, 1], [B, 1, 1, C] (padding), full shape; 0/-inf
  // entries with fully masked rows; finite large negative values as HF models use.
  {
    HostTensor m = zeros(DType::f32, {17});
    for (int64_t j = 0; j < 17; ++j) set(m, j, j % 3 == 0 ? double(kNegInf) : 0.0);
    L.add("mask_cols", SoftmaxAttrs{.has_mask = true}, {random(r, DType::f32, {5, 17}, wide), m});
  }
  {
    HostTensor m = zeros(DType::f32, {6, 1});
    set(m, 1, kNegInf);  // row 1 fully masked
    set(m, 4, -3.0);
    L.add("mask_rows", SoftmaxAttrs{.has_mask = true}, {random(r, DType::f32, {6, 33}, wide), m});
  }
  {
    HostTensor m = zeros(DType::f32, {2, 1, 1, 20});
    for (int64_t j = 0; j < 20; ++j) set(m, j, j >= 13 ? double(kNegInf) : 0.0);  // batch 0: tail padding
    for (int64_t j = 0; j < 20; ++j) set(m, 20 + j, double(kNegInf));             // batch 1: all padding
    L.add("mask_padding", SoftmaxAttrs{.scale = 0.25f, .has_mask = true},
          {random(r, DType::f32, {2, 3, 7, 20}, wide), m});
  }
  {
    HostTensor m = random(r, DType::f32, {9, 31}, {-2, 2, 0.3, 0, 0, 0, 0, 0.3});
    L.add("mask_full", SoftmaxAttrs{.has_mask = true}, {random(r, DType::f32, {9, 31}, wide), m});
    HostTensor big = zeros(DType::f32, {1, 64});
    for (int64_t j = 0; j < 64; ++j) set(big, j, j % 5 == 0 ? -1e9 : 0.0);
    L.add("mask_finite_large", SoftmaxAttrs{.has_mask = true}, {random(r, DType::f32, {8, 64}, wide), big});
  }
  {
    HostTensor m = random(r, DType::f32, {16, 16}, {-1, 1});
    L.add("causal_mask", SoftmaxAttrs{.causal = true, .has_mask = true},
          {random(r, DType::f32, {2, 16, 16}, wide), m});
  }
  // Model-shaped: attention probabilities of 4 heads x 64 queries over 257 keys.
  L.add("model_4x64x257", SoftmaxAttrs{.scale = 0.125f}, {random(r, DType::f32, {4, 64, 257}, {-8, 8})});
  L.add("model_512x512", SoftmaxAttrs{}, {random(r, DType::f32, {512, 512}, wide)});
}

void generate_embedding(CaseList& L) {
  Rng& r = L.rng();
  const DType tables[] = {DType::f32, DType::f16, DType::bf16};
  int i = 0;
  for (int64_t d : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 128, 129}) {
    const DType t = tables[i % 3];
    const DType idt = i % 2 ? DType::i64 : DType::i32;
    const int64_t V = 1 + (i * 7) % 50;
    HostTensor table = random(r, t, {V, d}, kSpecial);
    HostTensor ids = random_int(r, idt, {int64_t(3 + i % 5)}, 0, V - 1);
    L.add("d" + std::to_string(d) + "_v" + std::to_string(V) + "_" + std::string(dtype_name(t)) + "_" +
              std::string(dtype_name(idt)),
          EmbeddingAttrs{}, {table, ids});
    ++i;
  }
  // ids of rank 0, 1, 2, 3 with repeats and both ends of the table.
  for (auto dims : {std::vector<int64_t>{}, {1}, {3, 5}, {2, 3, 4}}) {
    HostTensor ids = random_int(r, DType::i32, dims, 0, 9);
    if (ids.desc.numel() > 1) set(ids, 0, 0), set(ids, 1, 9);
    L.add("ids_" + dims_name(dims), EmbeddingAttrs{}, {random(r, DType::f32, {10, 24}), ids});
  }
  L.add("model", EmbeddingAttrs{},
        {random(r, DType::f16, {1000, 128}), random_int(r, DType::i64, {4, 64}, 0, 999)});
  // Ids out of range: the reference rejects them; so must the backend.
  HostTensor high = random_int(r, DType::i32, {6}, 0, 4);
  set(high, 3, 5);
  L.add("error_id_high", EmbeddingAttrs{}, {random(r, DType::f32, {5, 8}), high}).expect_error = true;
  HostTensor neg = random_int(r, DType::i64, {2, 2}, 0, 4);
  set(neg, 2, -1);
  L.add("error_id_negative", EmbeddingAttrs{}, {random(r, DType::f32, {5, 8}), neg}).expect_error = true;
}

}  // namespace longrun::conformance::diff
