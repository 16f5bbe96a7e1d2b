// int8 precision's matmul (docs/usage.md#precision) on one-node graphs: random linear layers
// y = act(alpha · x · op(W) + bias + beta · C) on shapes around the vector and tile widths
// (M, N, K in 1, 5, 6, 7, 8, 15, 16, 17, 31, 33 and a few larger), rank-2 and rank-3 x, W as
// [N, K] (nk) and [K, N] (kn) in f32, f16 and bf16, each epilogue term and activation, and
// adversarial rows of x (zeros, one huge element, an infinity or a NaN: a NaN output row) and
// channels of W (zeros, one large element).
//   int8.reference: the reference backend at int8 runs the format's definition
//     (longrun/ops/reduced_precision.h) bit for bit when W is bound as a graph weight, the
//     f32 reference bit for bit when W is a graph input (not a constant: no linear layer) and
//     on matmuls that are not linear layers; and stays within the format's error of f32.
//   int8.differential: the backend under test at int8 against the reference backend at int8,
//     under the bound below. Skipped on the reference backend itself and where the backend
//     does not offer int8 (the cpu backend below the avx2 ISA level, cuda).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "conformance/case_runner.h"
#include "conformance/diff_case.h"
#include "conformance/run_case.h"
#include "longrun/ops/reduced_precision.h"
#include "ops/reference/access.h"

namespace longrun::conformance {
namespace {

using diff::HostTensor;
using diff::Rng;

// The backend under test at int8 against the reference at int8. Both compute the same
// dequantised product bit for bit (the int8 sums are exact and the dequantisation is fixed
// by the format); they differ only in the epilogue, f32 with FMA contraction and vector
// erf/tanh on the cpu, double on the reference, so the error is f32 rounding of
// act(alpha · y + bias + beta · C): measured at most 4.7e-8 (norm) and 1.2e-7 (elem). A
// wrong scale, channel or layout gives 1e-2 and more.
constexpr Tolerance kInt8VsReference{4e-7, 1e-6,
                                     "int8: the same quantized product, the epilogue in f32 vs double"};

// The format's error against the f32 product on the cases without special rows and
// channels (uniform data, K <= 300): at most 8.2e-3 measured. A wrong scale or layout gives
// O(1).
constexpr double kFormatMaxNormErr = 2e-2;

struct Int8Case {
  std::string name;
  MatmulAttrs attrs;
  std::vector<HostTensor> inputs;
  bool linear = true;       // a linear layer when W is bound as a graph weight
  bool non_finite = false;  // x holds an infinity or a NaN
  bool plain = false;       // no special rows or channels
};

struct Spec {
  int64_t M = 1, N = 1, K = 1;
  std::vector<int64_t> batch;  // x's leading dims (rank-3 x), also C's
  bool kn = false;
  DType wt = DType::f32;
  bool bias = false, c = false;
  float alpha = 1.0f, beta = 1.0f;
  Activation act = Activation::none;
  bool non_finite = false;
  bool adversarial = true;  // the special rows of x and channels of W
};

const char* act_tag(Activation a) {
  switch (a) {
    case Activation::none: return "";
    case Activation::relu: return "_relu";
    case Activation::gelu: return "_gelu";
    case Activation::gelu_tanh: return "_gelutanh";
  }
  return "";
}

Int8Case make_case(Rng& r, const std::string& tag, const Spec& s) {
  Int8Case c;
  c.attrs = MatmulAttrs{.trans_b = !s.kn,
                        .alpha = s.alpha,
                        .beta = s.beta,
                        .has_bias = s.bias,
                        .has_c = s.c,
                        .activation = s.act};
  std::vector<int64_t> xd = s.batch, cd = s.batch;
  xd.insert(xd.end(), {s.M, s.K});
  cd.insert(cd.end(), {s.M, s.N});
  HostTensor x = diff::random(r, DType::f32, xd, {-2.0, 2.0});
  const int64_t rows = x.desc.numel() / s.K;
  c.non_finite = false;
  c.plain = !s.adversarial;
  for (int64_t m = 0; m < rows && s.adversarial; ++m) {
    const int64_t at = m * s.K + r.integer(0, s.K - 1);
    if (m % 7 == 3)
      for (int64_t k = 0; k < s.K; ++k) diff::set(x, m * s.K + k, 0.0);
    else if (m % 7 == 5)
      diff::set(x, at, -1e6);
    else if (m % 7 == 6 && s.non_finite) {
      diff::set(
          x, at,
          m % 2 == 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity());
      c.non_finite = true;
    }
  }
  HostTensor w =
      diff::random(r, s.wt, s.kn ? std::vector<int64_t>{s.K, s.N} : std::vector<int64_t>{s.N, s.K});
  // Channel n: a row of [N, K], a column of [K, N].
  auto w_at = [&](int64_t n, int64_t k) { return s.kn ? k * s.N + n : n * s.K + k; };
  for (int64_t n = 0; n < s.N && s.adversarial; ++n) {
    if (n % 9 == 4)
      for (int64_t k = 0; k < s.K; ++k) diff::set(w, w_at(n, k), 0.0);
    else if (n % 9 == 7)
      diff::set(w, w_at(n, r.integer(0, s.K - 1)), 1e3);
  }
  c.inputs = {x, w};
  if (s.bias) c.inputs.push_back(diff::random(r, DType::f32, {s.N}));
  if (s.c) c.inputs.push_back(diff::random(r, DType::f32, cd));
  c.name = tag + "_m" + std::to_string(s.M) + "n" + std::to_string(s.N) + "k" + std::to_string(s.K) +
           (s.batch.empty() ? "" : "_b" + diff::dims_name(s.batch)) + (s.kn ? "_kn" : "_nk") +
           (s.wt == DType::f32 ? "" : "_" + std::string(dtype_name(s.wt))) + (s.bias ? "_bias" : "") +
           (s.c ? "_c" : "") + (s.alpha != 1.0f ? "_alpha" : "") + act_tag(s.act) +
           (s.non_finite ? "_nonfinite" : "") + (s.adversarial ? "" : "_plain");
  return c;
}

// With `adversarial` false: the same cases without the special rows and channels (whose
// values are the format's worst case, not its typical error).
std::vector<Int8Case> linear_cases(bool adversarial = true) {
  Rng r(0x1e8a7);
  std::vector<Int8Case> out;
  constexpr int64_t kSizes[] = {1, 5, 6, 7, 8, 15, 16, 17, 31, 33};
  constexpr Activation kActs[] = {Activation::none, Activation::relu, Activation::gelu,
                                  Activation::gelu_tanh};
  constexpr DType kWeights[] = {DType::f32, DType::f16, DType::f32, DType::bf16};
  constexpr float kBetas[] = {1.0f, -0.5f, 2.0f};
  int i = 0;
  auto add = [&](const std::string& tag, int64_t m, int64_t n, int64_t k) {
    Spec s{.M = m, .N = n, .K = k};
    s.kn = i % 2 == 1;
    s.wt = kWeights[(i / 2) % 4];
    s.bias = i % 3 != 0;
    s.c = i % 4 == 1;
    s.beta = kBetas[i % 3];
    s.alpha = i % 5 == 2 ? 0.25f : 1.0f;
    s.act = kActs[(i / 3) % 4];
    if (i % 3 == 2) s.batch = {2};
    s.non_finite = i % 2 == 0;
    s.adversarial = adversarial;
    out.push_back(make_case(r, tag, s));
    ++i;
  };
  for (int64_t s : kSizes) {
    add("sweep_m", s, 17, 33);
    add("sweep_n", 7, s, 16);
    add("sweep_k", 9, 31, s);
    add("cube", s, s, s);
    add("cube", s, s, s);  // the other layout, weight dtype and epilogue
  }
  auto spec = [&](const std::string& tag, Spec s) {
    s.adversarial = adversarial;
    out.push_back(make_case(r, tag, s));
  };
  for (bool kn : {false, true}) {
    for (Activation act : kActs)
      spec("act", {.M = 13, .N = 37, .K = 61, .kn = kn, .bias = true, .c = true, .beta = -0.5f, .act = act});
    for (DType wt : {DType::f16, DType::bf16})
      spec("half", {.M = 5, .N = 16, .K = 300, .kn = kn, .wt = wt, .bias = true, .act = Activation::gelu});
    spec("alpha0", {.M = 5, .N = 9, .K = 17, .kn = kn, .bias = true, .alpha = 0.0f});
    spec("rank3", {.M = 6, .N = 33, .K = 31, .batch = {3}, .kn = kn, .c = true, .non_finite = true});
    spec("model",
         {.M = 65, .N = 128, .K = 64, .batch = {2}, .kn = kn, .bias = true, .act = Activation::gelu});
  }
  return out;
}

// Matmuls that are never linear layers: the reference at int8 runs them in f32.
std::vector<Int8Case> non_linear_cases() {
  Rng r(0x5eed);
  std::vector<Int8Case> out;
  auto add = [&](const std::string& name, MatmulAttrs at, std::vector<int64_t> xd, std::vector<int64_t> wd) {
    Int8Case c;
    c.name = name;
    c.attrs = at;
    c.linear = false;
    c.inputs = {diff::random(r, DType::f32, xd), diff::random(r, DType::f32, wd)};
    out.push_back(std::move(c));
  };
  add("trans_a", {.trans_a = true, .trans_b = true}, {16, 7}, {9, 16});
  add("batched_w", {.trans_b = true}, {2, 7, 16}, {2, 9, 16});
  add("m1_kn", {}, {1, 16}, {16, 9});  // the control: a linear layer
  out.back().linear = true;
  return out;
}

OpCase op_case(const Int8Case& c) {
  OpCase oc;
  oc.op = OpKind::matmul;
  oc.attrs = c.attrs;
  for (const HostTensor& t : c.inputs) {
    oc.descs.push_back(t.desc);
    oc.bytes.push_back(t.bytes());
  }
  return oc;
}

// The output of `c` on `backend` in `mode`; fails the test (REQUIRE) on any harness error.
std::vector<std::byte> run_on(Backend& backend, const Int8Case& c, Mode mode) {
  const OpCase oc = op_case(c);
  PreparedCase p;
  const std::string why = prepare_case(backend, oc, mode, &p);
  REQUIRE_MESSAGE(why.empty(), c.name << " (" << mode_name(mode) << "): " << why);
  RunOutcome r = execute_case(backend, oc, p, std::byte{0x7f});
  REQUIRE_MESSAGE(r.violation.empty(), c.name << ": " << r.violation);
  REQUIRE_MESSAGE(r.status.ok(), c.name << ": " << r.status.to_string());
  return r.bytes;
}

TensorDesc out_desc(const Int8Case& c) {
  std::vector<TensorDesc> out;
  const OpCase oc = op_case(c);
  REQUIRE(infer_op(OpKind::matmul, c.attrs, oc.descs, &out).ok());
  REQUIRE(out.size() == 1);
  return out[0];
}

// The int8 format's definition (longrun/ops/reduced_precision.h) of a linear case, computed
// here from the ops::s8 functions and the reference matmul's epilogue.
std::vector<float> definition(const Int8Case& c) {
  const MatmulAttrs& at = c.attrs;
  const HostTensor& x = c.inputs[0];
  const HostTensor& w = c.inputs[1];
  const bool kn = !at.trans_b;
  const int64_t K = x.desc.dim(x.desc.rank() - 1), N = kn ? w.desc.dim(1) : w.desc.dim(0);
  const int64_t rows = x.desc.numel() / K;
  auto qw = ops::s8::quantize_weight(w.buf->data(), w.desc.dtype(),
                                     kn ? ops::LinearWeight::kn : ops::LinearWeight::nk, N, K);
  REQUIRE_MESSAGE(qw.ok(), qw.status().to_string());
  std::vector<int8_t> qa(size_t(rows * K));
  std::vector<float> sa(static_cast<size_t>(rows)), y(static_cast<size_t>(rows * N));
  ops::s8::quantize_rows_reference(reinterpret_cast<const float*>(x.buf->data()), rows, K, K, qa.data(), K,
                                   sa.data());
  ops::s8::gemm_s8_reference(qa.data(), K, sa.data(), rows, *qw, y.data(), N);
  const HostTensor* bias = at.has_bias ? &c.inputs[2] : nullptr;
  const HostTensor* cc = at.has_c ? &c.inputs[at.has_bias ? 3 : 2] : nullptr;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float& v = y[size_t(m * N + n)];
      v = float(ref::matmul_epilogue(at, v, bias ? diff::get(*bias, n) : 0.0,
                                     cc ? diff::get(*cc, m * N + n) : 0.0));
    }
  return y;
}

std::span<const std::byte> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float)};
}

// The reference backend with `precision`; fails the test when it cannot be made.
std::unique_ptr<Backend> reference(Precision precision) {
  BackendOptions o;
  o.threads = 1;
  o.precision = precision;
  auto b = create_backend("reference", o);
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  return std::move(b).value();
}

TEST_CASE("int8.reference: linear layers run the format's definition, other matmuls f32") {
  const std::string& name = conformance_backend_name();
  if (!name.empty() && name != "reference") return;  // a test of the reference backend
  const std::unique_ptr<Backend> f32 = reference(Precision::f32), int8 = reference(Precision::int8);
  CHECK(int8->description().find("int8") != std::string::npos);
  const Tolerance exact{0, 0, "the same computation"};
  const Tolerance format{kFormatMaxNormErr, 1.0, "the int8 format's error"};
  double worst_format = 0;
  std::string worst_name;
  int n_linear = 0;
  std::vector<Int8Case> cases = linear_cases();
  for (Int8Case& c : linear_cases(false)) cases.push_back(std::move(c));
  for (Int8Case& c : non_linear_cases()) cases.push_back(std::move(c));
  for (const Int8Case& c : cases) {
    CAPTURE(c.name);
    const TensorDesc d = out_desc(c);
    const std::vector<std::byte> got = run_on(*int8, c, Mode::weights);
    // With W a graph input the matmul is no linear layer: the f32 reference, bit for bit.
    const std::vector<std::byte> want_f32 = run_on(*f32, c, Mode::inputs);
    const std::string as_input = bitwise_difference(d, want_f32, run_on(*int8, c, Mode::inputs));
    CHECK_MESSAGE(as_input.empty(), c.name << " (W a graph input): " << as_input);
    if (!c.linear) {
      const std::string diff = bitwise_difference(d, want_f32, got);
      CHECK_MESSAGE(diff.empty(), c.name << " (not a linear layer): " << diff);
      continue;
    }
    ++n_linear;
    const std::vector<float> want = definition(c);
    const std::string diff = compare_outputs(d, bytes_of(want), got, exact);
    CHECK_MESSAGE(diff.empty(), c.name << ": " << diff);
    if (c.plain) {
      ErrorStats e;
      const std::string far = compare_outputs(d, want_f32, got, format, &e);
      CHECK_MESSAGE(far.empty(), c.name << " against f32: " << far);
      if (e.norm_err >= worst_format) worst_format = e.norm_err, worst_name = c.name;
    }
  }
  std::printf(
      "int8.reference: %d linear layers bit for bit as defined; worst norm_err against f32 %.3e (%s), "
      "bound %.1e\n",
      n_linear, worst_format, worst_name.c_str(), kFormatMaxNormErr);
}

TEST_CASE("int8.differential: the backend under test's int8 matmul against the reference's") {
  const std::string& name = conformance_backend_name();
  if (name.empty() || name == "reference") {
    MESSAGE("int8.differential skipped: the backend under test is the reference backend");
    return;
  }
  BackendOptions o = conformance_backend_options();
  o.precision = Precision::int8;
  Result<std::unique_ptr<Backend>> under_test = create_backend(name, o);
  if (!under_test.ok()) {
    MESSAGE("int8.differential skipped: " << under_test.status().to_string());
    return;
  }
  const std::unique_ptr<Backend> ref8 = reference(Precision::int8);
  struct Worst {
    ErrorStats e;
    std::string norm_case, elem_case;
    int cases = 0;
  };
  Worst nk, kn;
  for (const Int8Case& c : linear_cases()) {
    CAPTURE(c.name);
    const bool is_kn = !c.attrs.trans_b;
    const TensorDesc d = out_desc(c);
    const std::vector<std::byte> want = run_on(*ref8, c, Mode::weights);
    const std::vector<std::byte> got = run_on(**under_test, c, Mode::weights);
    ErrorStats e;
    const std::string diff = compare_outputs(d, want, got, kInt8VsReference, &e);
    CHECK_MESSAGE(diff.empty(), c.name << ": " << diff);
    Worst& w = is_kn ? kn : nk;
    ++w.cases;
    if (e.norm_err >= w.e.norm_err) w.e.norm_err = e.norm_err, w.norm_case = c.name;
    if (e.elem_err >= w.e.elem_err) w.e.elem_err = e.elem_err, w.elem_case = c.name;
  }
  auto print = [&](const char* label, const Worst& w) {
    std::printf("int8.differential.%s %s: %d cases, norm %.3g (%s) elem %.3g (%s), bound %.1e / %.1e\n",
                name.c_str(), label, w.cases, w.e.norm_err, w.norm_case.c_str(), w.e.elem_err,
                w.elem_case.c_str(), kInt8VsReference.max_norm_err, kInt8VsReference.max_abs_err);
  };
  print("nk", nk);
  print("kn", kn);
}

}  // namespace
}  // namespace longrun::conformance
