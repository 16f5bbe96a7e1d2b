// attention's second output with_lse (lse[b,h,i] = log sum_j exp(scale q_i . k_j) over the
// visible keys, -inf with none) and axial_attention's has_direct_state, on the cpu backend:
//  - the cpu kernels at every ISA level (scalar = the reference kernels through the backend)
//    against the reference kernel, both outputs, at 1 and 2 threads (bitwise identical), on
//    head dims and sequence lengths around the vector widths and the 64-query/64-key blocks,
//    causal with Nq < Nk and Nq > Nk, key padding with a fully padded batch, large logits;
//  - multi-output graphs: output 1 as a graph output and as another op's input, output 0
//    unused, and GraphBuilder::output_of's errors;
//  - axial_attention's two-pass form equals attention(with_lse) on the rows followed by
//    axial_attention(has_direct_state).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "unit/cpu_attention_test_util.h"

using namespace longrun;
using namespace longrun::attention_tests;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// y: attention's conformance tolerance (tests/conformance/tolerances.cpp): per element
// |a - b| <= 1e-4 * max(1, |b|), and sqrt(sum (a - b)^2 / sum b^2) <= 3e-5.
constexpr double kYElem = 1e-4;
constexpr double kYNorm = 3e-5;
// lse: |a - b| <= kLseAbs + kLseRel * |b| (b the reference's f64 value rounded to f32).
// The cpu computes lse = m + log(l): m the running max of f32 logits, l = sum_j exp(s_j - m).
//  - kLseRel: the final f32 rounding of m + log(l) is <= 2^-24 |lse|, and m is an f32 dot
//    product of length hd <= 65 whose rounding is <= ~hd/2 * 2^-23 * scale * sum_d |q_d k_d|
//    at worst (typically ~sqrt(hd) times less); with uniform data, scale * sum|q k| is a
//    few times |lse| at most where that term matters (large logits), so 2e-6 (~ 16 * 2^-23).
//  - kLseAbs: log(l)'s absolute error is l's relative error: exp (polynomial, a few ulp per
//    term) and a sequential f32 sum of up to 257 terms in (0, 1], rescaled per 64-key block:
//    ~sqrt(257) * 2^-24 ~ 1e-6 for random roundings (the worst case, every rounding
//    the same way, is 257 * 2^-24 ~ 1.5e-5); plus the logit rounding at O(1) logits.
// Measured maxima on this machine (avx2 and avx512; LONGRUN_CONFORMANCE_REPORT=1 prints them): 4.8e-7
// absolute (one ulp at |lse| ~ 4) at O(1) logits, 3.1e-5 (relative 2.7e-7) at |lse| ~ 115 with scale 4: at
// most 13% of the bound.
constexpr double kLseAbs = 2e-6;
constexpr double kLseRel = 2e-6;

// scalar (the reference kernels through the cpu backend) and the vector levels this
// machine has.
std::vector<std::string> cpu_isas() { return with_vector_isas({"scalar"}, "cpu with_lse"); }

const Tensor& output_named(const std::vector<NamedTensor>& outs, const std::string& name) {
  for (const NamedTensor& o : outs)
    if (o.name == name) return o.tensor;
  FAIL("no output ", name);
  return outs[0].tensor;
}

struct Outputs {
  std::vector<float> y, lse;
};

// One attention node with_lse on the cpu backend; both outputs are graph outputs.
Outputs run_cpu(const AttentionAttrs& attrs, const std::vector<Input>& ins, const std::string& isa,
                int threads) {
  GraphBuilder b;
  const ValueId y = b.attention(add_inputs(b, ins), attrs);
  b.output(y, "y");
  b.output(b.output_of(y, 1), "lse");
  auto g = b.build();
  REQUIRE(g.ok());
  auto out = run_graph(std::move(*g), ins, "cpu", isa, threads);
  REQUIRE(out.ok());
  REQUIRE(out->size() == 2);
  return {values_of(output_named(*out, "y")), values_of(output_named(*out, "lse"))};
}

Outputs run_reference(const AttentionAttrs& attrs, const std::vector<Input>& ins, const TensorDesc& yd,
                      const TensorDesc& ld) {
  Outputs o;
  o.y.assign(size_t(yd.numel()), 0.0f);
  o.lse.assign(size_t(ld.numel()), 0.0f);
  const TensorView out_views[2] = {TensorView{yd, o.y.data()}, TensorView{ld, o.lse.data()}};
  REQUIRE(run_reference_kernel(OpKind::attention, attrs, ins, out_views).ok());
  return o;
}

// The largest errors seen; printed with LONGRUN_CONFORMANCE_REPORT=1 (as the conformance
// tests print theirs).
struct Worst {
  double y_elem = 0, y_norm = 0, lse_abs = 0, lse_rel = 0, lse_bound_used = 0;
  void print(const char* what) const {
    const char* report = std::getenv("LONGRUN_CONFORMANCE_REPORT");
    if (report == nullptr || *report == 0 || *report == '0') return;
    std::printf(
        "%s: max y elem err %.3g, y norm err %.3g; max lse abs err %.3g, rel err %.3g, %.0f%% of the "
        "lse bound\n",
        what, y_elem, y_norm, lse_abs, lse_rel, 100 * lse_bound_used);
  }
};

void check_y(const std::vector<float>& got, const std::vector<float>& want, Worst* w) {
  REQUIRE(got.size() == want.size());
  double err2 = 0, ref2 = 0;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {
      if (bad++ < 3) FAIL_CHECK("non-finite y at ", i, ": got ", got[i], " want ", want[i]);
      continue;
    }
    const double d = std::abs(double(got[i]) - double(want[i]));
    const double e = d / std::max(1.0, std::abs(double(want[i])));
    w->y_elem = std::max(w->y_elem, e);
    if (e > kYElem && bad++ < 3) FAIL_CHECK("y at ", i, ": got ", got[i], " want ", want[i]);
    err2 += d * d;
    ref2 += double(want[i]) * double(want[i]);
  }
  CHECK(bad == 0);
  if (ref2 > 0) {
    const double norm = std::sqrt(err2 / ref2);
    w->y_norm = std::max(w->y_norm, norm);
    CHECK(norm <= kYNorm);
  }
}

// lse within kLseAbs + kLseRel |want|; -inf exactly where the reference has it, and there the
// query's y row is exactly zero. hv: y's row length.
void check_lse(const Outputs& got, const Outputs& want, int64_t hv, Worst* w) {
  REQUIRE(got.lse.size() == want.lse.size());
  int bad = 0;
  for (size_t i = 0; i < got.lse.size(); ++i) {
    const float g = got.lse[i], r = want.lse[i];
    if (std::isnan(r) && std::isnan(g)) continue;  // a NaN query (the y check covers its row)
    if (r == -kInf || g == -kInf || !std::isfinite(g) || !std::isfinite(r)) {
      if (!(g == -kInf && r == -kInf)) {
        if (bad++ < 3) FAIL_CHECK("lse at ", i, ": got ", g, " want ", r);
        continue;
      }
      for (int64_t e = 0; e < hv; ++e)
        if (got.y[i * size_t(hv) + size_t(e)] != 0.0f && bad++ < 3)
          FAIL_CHECK("query ", i, " sees no key but y[", e, "] = ", got.y[i * size_t(hv) + size_t(e)]);
      continue;
    }
    const double d = std::abs(double(g) - double(r));
    const double bound = kLseAbs + kLseRel * std::abs(double(r));
    w->lse_abs = std::max(w->lse_abs, d);
    w->lse_rel = std::max(w->lse_rel, d / std::max(1.0, std::abs(double(r))));
    w->lse_bound_used = std::max(w->lse_bound_used, d / bound);
    if (d > bound && bad++ < 3) FAIL_CHECK("lse at ", i, ": got ", g, " want ", r, " (|diff| ", d, ")");
  }
  CHECK(bad == 0);
}

struct LseCase {
  int64_t B = 1, H = 1, Nq = 1, Nk = 1, hd = 1, hv = 1;
  bool causal = false;
  bool mask = false;   // random padding (keep 0.7); with B > 1, batch 1 fully padded
  float scale = 0;     // 0: 1/sqrt(hd)
  float range = 1.0f;  // q, k, v uniform in [-range, range]
};

// Runs one case at every ISA with 1 and 2 threads: both outputs close to the reference,
// and the two thread counts bitwise identical.
void check_lse_case(const LseCase& c, std::mt19937& rng, Worst* w) {
  const AttentionShape shape{c.B, c.H, c.Nq, c.Nk, c.hd, c.hv};
  CAPTURE(shape);
  CAPTURE(c.causal);
  CAPTURE(c.mask);
  CAPTURE(c.scale);
  // With B > 1 every key of batch 1 is padded: lse -inf, y zeros.
  const DenseData d = random_dense(shape, rng, c.range, c.range, 0.7);
  const TensorDesc ld(DType::f32, {c.B, c.H, c.Nq});
  const std::vector<Input> ins = d.inputs(c.mask);
  const AttentionAttrs attrs{.scale = c.scale != 0 ? c.scale : 1.0f / std::sqrt(float(c.hd)),
                             .causal = c.causal,
                             .has_key_padding_mask = c.mask,
                             .with_lse = true};
  const Outputs want = run_reference(attrs, ins, d.yd, ld);
  for (const std::string& isa : cpu_isas()) {
    CAPTURE(isa);
    const Outputs o1 = run_cpu(attrs, ins, isa, 1);
    const Outputs o2 = run_cpu(attrs, ins, isa, 2);
    check_y(o1.y, want.y, w);
    check_lse(o1, want, c.hv, w);
    CHECK(bitwise_equal(o1.y, o2.y));
    CHECK(bitwise_equal(o1.lse, o2.lse));
    if (isa == "scalar") {  // the reference kernel itself
      CHECK(bitwise_equal(o1.y, want.y));
      CHECK(bitwise_equal(o1.lse, want.lse));
    }
  }
}

}  // namespace

TEST_CASE("attention with_lse: lse by hand") {
  // q = 1 (hd 1), keys 0, ln 3, ln 5 at scale 1: lse = log(1 + 3 + 5) = log 9; causal query 0
  // of 2 (Nq < Nk: offset 1) sees keys 0 and 1: log 4; a mask dropping key 1: log 6.
  const float q[2] = {1, 1}, k[3] = {0, std::log(3.0f), std::log(5.0f)}, v[3] = {1, 2, 3};
  const uint8_t mask[3] = {1, 0, 1};
  const TensorDesc qd(DType::f32, {1, 1, 2, 1}), kd(DType::f32, {1, 1, 3, 1}), md(DType::u8, {1, 3});
  const std::vector<Input> ins{{"q", qd, q}, {"k", kd, k}, {"v", kd, v}};
  std::vector<Input> masked = ins;
  masked.push_back({"mask", md, mask});
  for (const std::string& isa : cpu_isas()) {
    CAPTURE(isa);
    Outputs o = run_cpu({.with_lse = true}, ins, isa, 1);
    CHECK(o.lse[0] == doctest::Approx(std::log(9.0)).epsilon(1e-6));
    CHECK(o.y[0] == doctest::Approx((1 + 3 * 2 + 5 * 3) / 9.0).epsilon(1e-6));
    o = run_cpu({.causal = true, .with_lse = true}, ins, isa, 1);
    CHECK(o.lse[0] == doctest::Approx(std::log(4.0)).epsilon(1e-6));
    CHECK(o.lse[1] == doctest::Approx(std::log(9.0)).epsilon(1e-6));
    o = run_cpu({.has_key_padding_mask = true, .with_lse = true}, masked, isa, 1);
    CHECK(o.lse[0] == doctest::Approx(std::log(6.0)).epsilon(1e-6));
    o = run_cpu({.scale = 2.0f, .with_lse = true}, ins, isa, 1);  // logits 0, 2 ln 3, 2 ln 5
    CHECK(o.lse[0] == doctest::Approx(std::log(1.0 + 9.0 + 25.0)).epsilon(1e-6));
  }
}

TEST_CASE("attention with_lse: every Nq x Nk across the 64-query/64-key blocks, 1 vs 2 threads") {
  std::mt19937 rng(20250611);
  const int64_t ns[] = {1, 63, 64, 65, 130, 257};
  const int64_t hds[] = {1, 7, 16, 17, 64, 65};
  Worst w;
  int n = 0;
  for (int64_t nq : ns)
    for (int64_t nk : ns) {
      const bool mask = (n % 4) >= 2;
      check_lse_case({.B = mask ? 2 : 1 + n % 2,
                      .H = 1 + (n / 3) % 2,
                      .Nq = nq,
                      .Nk = nk,
                      .hd = hds[n % 6],
                      .hv = hds[(n * 5 + 1) % 6],
                      .causal = (n % 2) == 1,
                      .mask = mask},
                     rng, &w);
      ++n;
    }
  w.print("with_lse Nq x Nk");
}

TEST_CASE("attention with_lse: hd x hv at a multi-block size") {
  std::mt19937 rng(611);
  const int64_t hds[] = {1, 7, 16, 17, 64, 65};
  Worst w;
  int n = 0;
  for (int64_t hd : hds)
    for (int64_t hv : hds) {
      check_lse_case({.B = 1 + n % 2,
                      .H = 1,
                      .Nq = 65,
                      .Nk = 130,
                      .hd = hd,
                      .hv = hv,
                      .causal = n % 3 == 1,
                      .mask = n % 3 == 2,
                      .scale = 0.3f},
                     rng, &w);
      ++n;
    }
  w.print("with_lse hd x hv");
}

TEST_CASE("attention with_lse: causal tall and wide, padding, big logits") {
  std::mt19937 rng(4711);
  Worst w;
  // Nq > Nk causal: queries i < Nq - Nk see no key (lse -inf, y zeros); with Nk = 1 only the
  // last query sees anything.
  check_lse_case({.B = 1, .H = 2, .Nq = 257, .Nk = 63, .hd = 16, .hv = 17, .causal = true}, rng, &w);
  check_lse_case({.B = 2, .H = 1, .Nq = 130, .Nk = 1, .hd = 7, .hv = 7, .causal = true}, rng, &w);
  check_lse_case({.B = 2, .H = 1, .Nq = 65, .Nk = 64, .hd = 65, .hv = 1, .causal = true, .mask = true}, rng,
                 &w);
  // Nq < Nk causal: every query sees a prefix of at least Nk - Nq + 1 keys.
  check_lse_case({.B = 1, .H = 2, .Nq = 1, .Nk = 257, .hd = 64, .hv = 64, .causal = true}, rng, &w);
  check_lse_case({.B = 2, .H = 1, .Nq = 63, .Nk = 257, .hd = 17, .hv = 16, .causal = true, .mask = true}, rng,
                 &w);
  // Key padding with a fully padded batch (batch 1), causal and not.
  check_lse_case({.B = 3, .H = 1, .Nq = 130, .Nk = 130, .hd = 16, .hv = 16, .mask = true}, rng, &w);
  check_lse_case({.B = 2, .H = 2, .Nq = 64, .Nk = 65, .hd = 64, .hv = 7, .causal = true, .mask = true}, rng,
                 &w);
  w.print("with_lse causal/padding");
  // Large logits: scale 4, values in [-2, 2] (logits up to ~100 at hd 16): the running max
  // must rescale exactly; lse is large, so its relative bound matters here.
  Worst big;
  check_lse_case({.B = 1, .H = 2, .Nq = 130, .Nk = 257, .hd = 16, .hv = 16, .scale = 4.0f, .range = 2.0f},
                 rng, &big);
  check_lse_case(
      {.B = 2, .H = 1, .Nq = 257, .Nk = 130, .hd = 17, .hv = 9, .causal = true, .scale = 4.0f, .range = 2.0f},
      rng, &big);
  check_lse_case({.B = 2,
                  .H = 1,
                  .Nq = 65,
                  .Nk = 257,
                  .hd = 64,
                  .hv = 65,
                  .causal = true,
                  .mask = true,
                  .scale = 4.0f,
                  .range = 2.0f},
                 rng, &big);
  big.print("with_lse big logits");
}

TEST_CASE("attention with_lse: non-finite values behind masks never leak; NaN logits give a NaN lse") {
  std::mt19937 rng(5);
  const int64_t B = 2, H = 1, N = 70, hd = 16, hv = 16;
  const TensorDesc qd(DType::f32, {B, H, N, hd}), vd(DType::f32, {B, H, N, hv}), md(DType::u8, {B, N}),
      ld(DType::f32, {B, H, N});
  std::vector<float> q = uniform(rng, qd.numel(), -1, 1), k = uniform(rng, qd.numel(), -1, 1),
                     v = uniform(rng, vd.numel(), -1, 1);
  std::vector<uint8_t> mask(size_t(B * N), 1);
  // Padded keys 5 and 66 of batch 0 hold NaN in K and inf / NaN in V.
  for (int64_t j : {5, 66}) {
    mask[size_t(j)] = 0;
    for (int64_t d = 0; d < hd; ++d) k[size_t(j * hd + d)] = std::nanf("");
    for (int64_t e = 0; e < hv; ++e) v[size_t(j * hv + e)] = (j == 5) ? kInf : std::nanf("");
  }
  // Causally masked: the last key of batch 1 has a huge K; only the last query sees it.
  for (int64_t d = 0; d < hd; ++d) k[size_t((N + N - 1) * hd + d)] = 1e30f;
  // A NaN in one query of batch 1 and in visible key 20 of batch 0 (seen by queries >= 20):
  // those y rows are NaN, and so is their lse, as in the reference (the keys are visible,
  // their logits NaN). -inf would claim "no visible key": axial_attention(has_direct_state)
  // then drops y0, and a NaN key would vanish from the composed result.
  q[size_t((N + 10) * hd + 3)] = std::nanf("");
  k[size_t(20 * hd + 7)] = std::nanf("");
  const std::vector<Input> ins{
      {"q", qd, q.data()}, {"k", qd, k.data()}, {"v", vd, v.data()}, {"mask", md, mask.data()}};
  const AttentionAttrs attrs{.scale = 0.25f, .causal = true, .has_key_padding_mask = true, .with_lse = true};
  const Outputs want = run_reference(attrs, ins, TensorDesc(DType::f32, {B, H, N, hv}), ld);
  CHECK(std::isnan(want.lse[size_t(N + 10)]));
  CHECK(std::isnan(want.lse[20]));
  CHECK(std::isnan(want.lse[size_t(N - 1)]));
  CHECK(std::isfinite(want.lse[19]));
  for (const std::string& isa : cpu_isas()) {
    CAPTURE(isa);
    const Outputs o1 = run_cpu(attrs, ins, isa, 1);
    const Outputs o2 = run_cpu(attrs, ins, isa, 2);
    CHECK(bitwise_equal(o1.y, o2.y));
    CHECK(bitwise_equal(o1.lse, o2.lse));
    // The last query's huge logit (~6e29) is checked like any other (relative bound).
    int nan_rows = 0, nan_mismatch = 0, other_bad = 0;
    float first_mismatch = 0;
    for (int64_t row = 0; row < B * H * N; ++row) {
      const float g = o1.lse[size_t(row)], r = want.lse[size_t(row)];
      bool y_nan = false, y_finite = true;
      for (int64_t e = 0; e < hv; ++e) {
        y_nan = y_nan || std::isnan(o1.y[size_t(row * hv + e)]);
        y_finite = y_finite && std::isfinite(o1.y[size_t(row * hv + e)]);
      }
      if (std::isnan(r)) {
        ++nan_rows;
        if (!std::isnan(g) && nan_mismatch++ == 0) first_mismatch = g;
        if (!y_nan) ++other_bad;
        continue;
      }
      if (!std::isfinite(g) || !y_finite ||
          std::abs(double(g) - double(r)) > kLseAbs + kLseRel * std::abs(double(r)))
        ++other_bad;
    }
    CHECK(nan_rows == 51);  // batch 0 queries 20..69, batch 1 query 10
    CHECK_MESSAGE(nan_mismatch == 0, nan_mismatch, " of ", nan_rows,
                  " queries with NaN logits get a non-NaN lse (first: ", first_mismatch, ")");
    CHECK(other_bad == 0);
  }
}

TEST_CASE("attention with_lse in a graph: lse as a graph output and another op's input") {
  std::mt19937 rng(99);
  const int64_t B = 2, H = 2, Nq = 70, Nk = 66, hd = 16, hv = 8;
  const TensorDesc qd(DType::f32, {B, H, Nq, hd}), kd(DType::f32, {B, H, Nk, hd}),
      vd(DType::f32, {B, H, Nk, hv}), md(DType::u8, {B, Nk}), yd(DType::f32, {B, H, Nq, hv}),
      ld(DType::f32, {B, H, Nq});
  const std::vector<float> q = uniform(rng, qd.numel(), -1, 1), k = uniform(rng, kd.numel(), -1, 1),
                           v = uniform(rng, vd.numel(), -1, 1);
  std::vector<uint8_t> mask(size_t(B * Nk), 1);
  for (int64_t j = 0; j < Nk; ++j) mask[size_t(Nk + j)] = j % 3 == 0 ? 0 : 1;
  mask[size_t(Nk - 1)] = 0;
  const std::vector<Input> ins{
      {"q", qd, q.data()}, {"k", kd, k.data()}, {"v", vd, v.data()}, {"mask", md, mask.data()}};
  // Causal with Nq > Nk: queries 0..3 see nothing.
  const AttentionAttrs attrs{.scale = 0.25f, .causal = true, .has_key_padding_mask = true, .with_lse = true};
  const Outputs want = run_reference(attrs, ins, yd, ld);
  // Causal offset Nk - Nq = -4: queries 0..3 see no key; in batch 1 query 4 sees only key 0,
  // which is padded.
  int dead = 0;
  for (float l : want.lse) dead += l == -kInf ? 1 : 0;
  CHECK(dead == B * H * (Nq - Nk) + H);

  // Graph 1: y, lse and scale(lse) (0.5 lse + 1) are graph outputs.
  // Graph 2: only scale(lse) is an output; the node's output 0 is consumed by nobody.
  auto build = [&](bool with_y) {
    GraphBuilder b;
    const ValueId y = b.attention(add_inputs(b, ins), attrs);
    const ValueId lse = b.output_of(y, 1);
    REQUIRE(lse != kNoValue);
    CHECK(lse != y);
    CHECK(b.output_of(y, 0) == y);
    CHECK(b.desc(lse) == ld);
    CHECK(b.desc(y) == yd);
    if (with_y) {
      b.output(y, "y");
      b.output(lse, "lse");
    }
    b.output(b.scale({lse}, {.scale = 0.5f, .shift = 1.0f}), "lse_scaled");
    auto g = b.build();
    REQUIRE(g.ok());
    return std::move(*g);
  };
  Worst w;
  std::vector<std::pair<std::string, std::string>> runs{{"reference", ""}};
  for (const std::string& isa : cpu_isas()) runs.push_back({"cpu", isa});
  for (const auto& [backend, isa] : runs) {
    CAPTURE(backend);
    CAPTURE(isa);
    for (bool with_y : {true, false}) {
      CAPTURE(with_y);
      auto out = run_graph(build(with_y), ins, backend, isa, 2);
      REQUIRE(out.ok());
      REQUIRE(out->size() == (with_y ? 3u : 1u));
      Outputs got;
      got.y = with_y ? values_of(output_named(*out, "y")) : std::vector<float>(want.y.size(), 0.0f);
      got.lse = values_of(output_named(*out, "lse_scaled"));
      for (float& l : got.lse) l = (l - 1.0f) * 2.0f;  // back to lse: two more f32 roundings
      if (with_y) {
        check_y(got.y, want.y, &w);
        const Outputs direct{got.y, values_of(output_named(*out, "lse"))};
        check_lse(direct, want, hv, &w);
      }
      // scale's output, mapped back: within the lse bound too (|lse| ~ 1 here, so the extra
      // roundings are ~1e-7); -inf stays -inf.
      Outputs scaled = want;
      if (!with_y) std::fill(scaled.y.begin(), scaled.y.end(), 0.0f);
      check_lse(got, scaled, hv, &w);
    }
  }

  // Graph 3: both outputs are read last, after a chain of intermediates of lse's and y's
  // sizes made from another input (a buffer freed too early would be overwritten by them):
  // out = lse + t, t = 4 x (0.5 t + 0.25) of x [B, H, Nq]; y_late = 2 y + u, u = 4 x relu(0.5 u -
  // 0.125) of z [B, H, Nq, hv].
  const std::vector<float> x = uniform(rng, ld.numel(), -1, 1), z = uniform(rng, yd.numel(), -1, 1);
  std::vector<Input> late_ins = ins;
  late_ins.push_back({"x", ld, x.data()});
  late_ins.push_back({"z", yd, z.data()});
  GraphBuilder b;
  const std::vector<ValueId> ids = add_inputs(b, late_ins);
  const ValueId y = b.attention({ids[0], ids[1], ids[2], ids[3]}, attrs);
  const ValueId lse = b.output_of(y, 1);
  ValueId t = ids[4], u = ids[5];
  for (int i = 0; i < 4; ++i) {
    t = b.scale({t}, {.scale = 0.5f, .shift = 0.25f});
    u = b.relu({b.scale({u}, {.scale = 0.5f, .shift = -0.125f})});
  }
  b.output(b.add({lse, t}), "lse_plus_t");
  b.output(b.add({b.scale({y}, {.scale = 2.0f}), u}), "y_late");
  auto g = b.build();
  REQUIRE(g.ok());
  Outputs late_want = want;
  for (size_t i = 0; i < x.size(); ++i) {
    double tv = x[i];
    for (int r = 0; r < 4; ++r) tv = 0.5 * tv + 0.25;
    late_want.lse[i] = float(double(want.lse[i]) + tv);
  }
  for (size_t i = 0; i < z.size(); ++i) {
    double uv = z[i];
    for (int r = 0; r < 4; ++r) uv = std::max(0.0, 0.5 * uv - 0.125);
    late_want.y[i] = float(2.0 * double(want.y[i]) + uv);
  }
  for (const auto& [backend, isa] : runs) {
    CAPTURE(backend);
    CAPTURE(isa);
    auto out = run_graph(*g, late_ins, backend, isa, 2);
    REQUIRE(out.ok());
    const Outputs got{values_of(output_named(*out, "y_late")), values_of(output_named(*out, "lse_plus_t"))};
    check_y(got.y, late_want.y, &w);
    // lse + t: -inf exactly at the dead queries (y_late is not zero there: compare lse only).
    Outputs lse_only = got, want_only = late_want;
    lse_only.y.assign(got.y.size(), 0.0f);
    want_only.y.assign(got.y.size(), 0.0f);
    check_lse(lse_only, want_only, hv, &w);
  }
  w.print("with_lse graph");
}

TEST_CASE("GraphBuilder::output_of: bad index, no producer and sticky errors") {
  const TensorDesc qd(DType::f32, {1, 2, 3, 4}), vd(DType::f32, {1, 2, 3, 5});
  auto start = [&](GraphBuilder& b, bool with_lse, ValueId* q) {
    *q = b.input("q", qd);
    const ValueId k = b.input("k", qd), v = b.input("v", vd);
    return b.attention({*q, k, v}, {.with_lse = with_lse});
  };
  auto fails_with = [](GraphBuilder& b, std::initializer_list<const char*> parts) {
    CHECK_FALSE(b.status().ok());
    CHECK(b.status().code() == StatusCode::invalid_argument);
    for (const char* p : parts)
      CHECK_MESSAGE(b.status().message().find(p) != std::string::npos, b.status().message());
    auto g = b.build();
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().message() == b.status().message());
  };
  ValueId q = kNoValue;
  {  // index 2 of a 2-output node; then every call is a no-op and the first error stays
    GraphBuilder b;
    const ValueId y = start(b, true, &q);
    REQUIRE(b.output_of(y, 1) != kNoValue);
    CHECK(b.output_of(y, 2) == kNoValue);
    const std::string first = b.status().message();
    CHECK(b.output_of(y, 1) == kNoValue);
    CHECK(b.relu({y}) == kNoValue);
    CHECK(b.status().message() == first);
    fails_with(b, {"output_of", "output 2"});
  }
  {  // index 1 of attention without with_lse (one output)
    GraphBuilder b;
    const ValueId y = start(b, false, &q);
    CHECK(b.output_of(y, 0) == y);
    CHECK(b.output_of(y, 1) == kNoValue);
    fails_with(b, {"output_of", "output 1"});
  }
  {  // a negative index
    GraphBuilder b;
    const ValueId y = start(b, true, &q);
    CHECK(b.output_of(y, -1) == kNoValue);
    fails_with(b, {"output_of"});
  }
  {  // a graph input: no producer
    GraphBuilder b;
    start(b, true, &q);
    CHECK(b.output_of(q, 0) == kNoValue);
    fails_with(b, {"output_of", "no producer"});
  }
  {  // a weight: no producer either
    GraphBuilder b;
    const float w[4] = {};
    const ValueId wt = b.weight("w", TensorDesc(DType::f32, {4}), w);
    CHECK(b.output_of(wt, 0) == kNoValue);
    fails_with(b, {"output_of"});
  }
  {  // a value id that is not in the graph
    GraphBuilder b;
    start(b, true, &q);
    CHECK(b.output_of(ValueId(1000), 0) == kNoValue);
    fails_with(b, {"output_of", "1000"});
  }
  {  // after an earlier error: kNoValue, and the earlier error is the one reported
    GraphBuilder b;
    const ValueId y = start(b, true, &q);
    CHECK(b.relu({q, q}) == kNoValue);  // relu takes one input
    const std::string first = b.status().message();
    REQUIRE_FALSE(first.empty());
    CHECK(b.output_of(y, 1) == kNoValue);
    CHECK(b.status().message() == first);
  }
}

namespace {

ValueId reshape(GraphBuilder& b, ValueId x, std::initializer_list<int64_t> dims) {
  ReshapeAttrs r;
  r.rank = int(dims.size());
  std::copy(dims.begin(), dims.end(), r.dims.begin());
  return b.reshape({x}, r);
}

}  // namespace

TEST_CASE("axial_attention: two-pass = attention(with_lse) on the rows -> has_direct_state") {
  struct Shape {
    int64_t segment, N, hd;
  };
  std::mt19937 rng(8128);
  Worst w;
  for (const Shape& sh : {Shape{8, 64, 16}, Shape{128, 256, 64}})
    for (bool causal : {false, true}) {
      CAPTURE(sh.segment);
      CAPTURE(sh.N);
      CAPTURE(causal);
      const int64_t B = 1, H = 2, N = sh.N, s = sh.segment, n = N / s, hd = sh.hd, hv = sh.hd;
      const float scale = 1.0f / std::sqrt(float(hd));
      const TensorDesc xd(DType::f32, {B, H, N, hd});
      const char* names[] = {"q", "k", "v", "ks", "vs"};
      std::vector<std::vector<float>> data;
      std::vector<Input> ins;
      for (int i = 0; i < 5; ++i) data.push_back(uniform(rng, xd.numel(), -1, 1));
      for (int i = 0; i < 5; ++i) ins.push_back({names[i], xd, data[size_t(i)].data()});

      GraphBuilder b;
      const std::vector<ValueId> x = add_inputs(b, ins);
      AxialAttentionAttrs ax{.scale = scale, .segment = s, .causal = causal};
      b.output(b.axial_attention(x, ax), "two_pass");
      // Row u of (b, h) is "head" h * n + u of a [B, H * n, s, .] view.
      const ValueId y0 =
          b.attention({reshape(b, x[0], {B, H * n, s, hd}), reshape(b, x[1], {B, H * n, s, hd}),
                       reshape(b, x[2], {B, H * n, s, hv})},
                      {.scale = scale, .causal = causal, .with_lse = true});
      const ValueId lse0 = b.output_of(y0, 1);
      ax.has_direct_state = true;
      b.output(b.axial_attention(
                   {x[0], reshape(b, y0, {B, H, N, hv}), reshape(b, lse0, {B, H, N}), x[3], x[4]}, ax),
               "composed");
      auto g = b.build();
      REQUIRE(g.ok());
      std::vector<float> oracle;  // two-pass at isa scalar: the reference kernel
      for (const std::string& isa : cpu_isas()) {
        CAPTURE(isa);
        auto out = run_graph(*g, ins, "cpu", isa, 2);
        REQUIRE(out.ok());
        const std::vector<float> two = values_of(output_named(*out, "two_pass"));
        const std::vector<float> composed = values_of(output_named(*out, "composed"));
        if (isa == "scalar") oracle = two;
        REQUIRE(!oracle.empty());
        check_y(composed, two, &w);
        check_y(two, oracle, &w);
        check_y(composed, oracle, &w);
      }
    }
  w.print("axial two-pass vs composed");
}
