// Tests of the conformance harness itself: the comparison catches what it claims to catch
// (bit differences, NaN/Inf position, tolerance overruns, guard-byte writes, modified inputs,
// non-determinism, 1- vs 2-thread differences, accepted errors), for the golden and the
// differential runners, and the attrs JSON mapping rejects what it should.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "conformance/attrs_json.h"
#include "conformance/diff_case.h"
#include "conformance/differential.h"
#include "conformance/golden_cases.h"
#include "conformance/run_case.h"

namespace longrun::conformance {
namespace {

struct F32Entry {
  std::vector<float> values;
  SafetensorsEntry entry;
  explicit F32Entry(std::vector<float> v) : values(std::move(v)) {
    entry.name = "expected";
    entry.desc = TensorDesc(DType::f32, {int64_t(values.size())});
    entry.bytes = std::as_bytes(std::span<const float>(values));
  }
};

std::string compare(const std::vector<float>& expected, const std::vector<float>& actual, Tolerance tol) {
  F32Entry e(expected);
  return compare_with_golden(e.entry, std::as_bytes(std::span<const float>(actual)), tol);
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST_CASE("harness.compare: exact tolerance is bit-exact, NaN matches any NaN") {
  const Tolerance exact{0, 0, "test"};
  CHECK(compare({1, 2, kInf, kNaN}, {1, 2, kInf, kNaN}, exact).empty());
  CHECK(compare({1, kNaN}, {1, -kNaN}, exact).empty());
  CHECK_FALSE(compare({1, 2}, {1, std::nextafter(2.0f, 3.0f)}, exact).empty());
  CHECK_FALSE(compare({0.0f}, {-0.0f}, exact).empty());
  CHECK_FALSE(compare({kNaN}, {1}, exact).empty());
}

TEST_CASE("harness.compare: NaN/Inf positions must match; bounds are enforced") {
  const Tolerance loose{1e-3, 1e-3, "test"};
  CHECK(compare({1, kNaN, kInf, -kInf}, {1, kNaN, kInf, -kInf}, loose).empty());
  CHECK_FALSE(compare({1, kNaN}, {1, 0}, loose).empty());
  CHECK_FALSE(compare({1, 0}, {1, kNaN}, loose).empty());
  CHECK_FALSE(compare({kInf}, {-kInf}, loose).empty());
  CHECK_FALSE(compare({kInf}, {3e38f}, loose).empty());
  const Tolerance tol{1e-5, 1e-5, "test"};
  CHECK(compare({1, 2, 3}, {1, 2, 3.00001f}, Tolerance{1e-5, 1e-5, "test"}).empty());
  CHECK_FALSE(compare({1, 2, 3}, {1, 2, 3.001f}, tol).empty());  // norm error ~2.7e-4
  // Element error is relative above |b| = 1: 1000 vs 1000.001 passes 1e-5 ...
  CHECK(compare({1000}, {1000.001f}, Tolerance{1e-5, 1e-5, "test"}).empty());
  // ... and absolute below: a 2e-5 error on a tiny value fails even if the norm error is small.
  CHECK_FALSE(
      compare({100, 100, 100, 1e-6f}, {100, 100, 100, 2.1e-5f}, Tolerance{1e-5, 1e-5, "test"}).empty());
  CHECK_FALSE(compare({1}, {1}, Tolerance{-1, -1, "missing"}).empty());  // no table entry
}

// A backend wrapper that breaks one rule of the contract after the real backend ran.
class Saboteur final : public Backend {
 public:
  enum class Kind { guard, input, drift, nondeterministic, lsb, ignore_errors };
  Saboteur(Backend& inner, Kind kind) : inner_(inner), kind_(kind) {}
  std::string_view name() const override { return "saboteur"; }
  bool supports(const Graph& g, const Node& n, std::string* why) const override {
    return inner_.supports(g, n, why);
  }
  Result<std::unique_ptr<Prepared>> prepare(const Graph& g, const Plan& p, const PrepareOptions& o) override {
    return inner_.prepare(g, p, o);
  }
  Status execute(Prepared& p, const Bindings& b, RunHooks* h) override {
    if (kind_ == Kind::ignore_errors) {
      (void)inner_.execute(p, b, h);
      return {};
    }
    LR_RETURN_IF_ERROR(inner_.execute(p, b, h));
    LR_RETURN_IF_ERROR(inner_.synchronize());
    auto* out = static_cast<std::byte*>(b.outputs[0].data);
    const size_t n = size_t(b.outputs[0].desc.nbytes());
    switch (kind_) {
      case Kind::guard: out[n] = std::byte{0}; break;
      case Kind::input: static_cast<std::byte*>(b.inputs[0].data)[0] ^= std::byte{1}; break;
      case Kind::drift: {
        float f;
        std::memcpy(&f, out, 4);
        f *= 1.001f;
        std::memcpy(out, &f, 4);
        break;
      }
      case Kind::nondeterministic:
        if (++runs_ == 2) out[n - 1] ^= std::byte{1};
        break;
      case Kind::lsb: out[0] ^= std::byte{1}; break;  // 1 ulp: within any non-exact tolerance
      case Kind::ignore_errors: break;
    }
    return {};
  }
  Status synchronize() override { return {}; }
  std::string description() const override { return "saboteur"; }

 private:
  Backend& inner_;
  Kind kind_;
  int runs_ = 0;
};

// A backend wrapper whose supports() refuses every node with a bf16 input 1, saying `why`.
class Refuser final : public Backend {
 public:
  Refuser(Backend& inner, std::string why) : inner_(inner), why_(std::move(why)) {}
  std::string_view name() const override { return "refuser"; }
  bool supports(const Graph& g, const Node& n, std::string* why) const override {
    if (n.inputs.size() > 1 && g.value(n.inputs[1]).desc.dtype() == DType::bf16) {
      if (why != nullptr) *why = why_;
      return false;
    }
    return inner_.supports(g, n, why);
  }
  Result<std::unique_ptr<Prepared>> prepare(const Graph& g, const Plan& p, const PrepareOptions& o) override {
    return inner_.prepare(g, p, o);
  }
  Status execute(Prepared& p, const Bindings& b, RunHooks* h) override { return inner_.execute(p, b, h); }
  Status synchronize() override { return inner_.synchronize(); }
  std::string description() const override { return "refuser"; }

 private:
  Backend& inner_;
  std::string why_;
};

TEST_CASE("harness.run_case: guard bytes, inputs, accuracy and determinism are checked") {
  Result<GoldenFile> file = load_golden_file(OpKind::add);
  REQUIRE(file.ok());
  const GoldenCase* c = nullptr;
  for (const GoldenCase& g : file->cases)
    if (g.name == "same_3x5") c = &g;
  REQUIRE(c != nullptr);
  CHECK(run_case(conformance_backend(), *c, Mode::inputs).ok);
  for (auto kind : {Saboteur::Kind::guard, Saboteur::Kind::input, Saboteur::Kind::drift,
                    Saboteur::Kind::nondeterministic}) {
    Saboteur bad(conformance_backend(), kind);
    const CaseOutcome r = run_case(bad, *c, Mode::inputs);
    CHECK_MESSAGE(!r.ok, "sabotage kind " << int(kind) << " went unnoticed");
  }
}

// A differential case on fresh [3, 17] inputs.
diff::DiffCase small_case(const OpAttrs& attrs, int inputs) {
  diff::Rng rng(7);
  diff::DiffCase c{"self_test", attrs, {}, false};
  for (int i = 0; i < inputs; ++i) c.inputs.push_back(diff::random(rng, DType::f32, {3, 17}));
  return c;
}

TEST_CASE("harness.differential: sabotage is caught, the honest backend passes") {
  Result<std::unique_ptr<Backend>> ref = create_backend("reference");
  REQUIRE(ref.ok());
  Backend& under = conformance_backend();
  auto failures = [&](OpKind op, const diff::DiffCase& c, Backend& one, Backend* two) {
    DiffReport rep;
    return run_diff_case(op, c, DiffBackends{ref.value().get(), &one, two}, rep);
  };
  const diff::DiffCase add = small_case(AddAttrs{}, 2);
  const diff::DiffCase scale = small_case(ScaleAttrs{0.5f, 0.25f}, 1);
  CHECK(failures(OpKind::add, add, under, nullptr).empty());
  CHECK(failures(OpKind::add, add, under, &under).empty());
  for (auto kind : {Saboteur::Kind::guard, Saboteur::Kind::input, Saboteur::Kind::drift}) {
    Saboteur bad(under, kind);
    CHECK_MESSAGE(!failures(OpKind::add, add, bad, nullptr).empty(),
                  "sabotage kind " << int(kind) << " went unnoticed");
  }
  {  // a second run (same thread count) that differs
    Saboteur bad(under, Saboteur::Kind::nondeterministic);
    CHECK_FALSE(failures(OpKind::scale, scale, under, &bad).empty());
  }
  {  // 1 ulp within the tolerance, but only with 2 threads: not bitwise identical
    Saboteur bad(under, Saboteur::Kind::lsb);
    CHECK(failures(OpKind::scale, scale, bad, nullptr).empty());
    CHECK_FALSE(failures(OpKind::scale, scale, under, &bad).empty());
  }
  {  // a case the reference rejects must be rejected
    std::vector<diff::DiffCase> cases = diff::generate_cases(OpKind::embedding);
    const diff::DiffCase* err = nullptr;
    for (const diff::DiffCase& c : cases)
      if (c.expect_error) err = &c;
    REQUIRE(err != nullptr);
    CHECK(failures(OpKind::embedding, *err, under, nullptr).empty());
    Saboteur bad(under, Saboteur::Kind::ignore_errors);
    CHECK_FALSE(failures(OpKind::embedding, *err, bad, nullptr).empty());
  }
  {  // a documented refusal (may_refuse) is accepted only with its reason, and only there
    const diff::DiffCase* kv16 = nullptr;
    std::vector<diff::DiffCase> cases = diff::generate_cases(OpKind::attention);
    for (const diff::DiffCase& c : cases)
      if (c.may_refuse == "bf16" && kv16 == nullptr) kv16 = &c;
    REQUIRE(kv16 != nullptr);
    Refuser says_why(under, "attention: k/v dtype bf16/bf16 is not supported");
    Refuser mute(under, "no reason");
    CHECK(failures(OpKind::attention, *kv16, says_why, nullptr).empty());
    CHECK_FALSE(failures(OpKind::attention, *kv16, mute, nullptr).empty());
    diff::DiffCase strict = *kv16;
    strict.may_refuse.clear();
    CHECK_FALSE(failures(OpKind::attention, strict, says_why, nullptr).empty());
  }
}

TEST_CASE("harness.attrs_json: round trip and strictness") {
#define LR_OP(name, Attrs)                                                        \
  {                                                                               \
    const OpAttrs a{Attrs{}};                                                     \
    Result<OpAttrs> b = attrs_from_json(OpKind::name, attrs_to_json(a));          \
    CHECK_MESSAGE(b.ok(), #name ": " << b.status().to_string());                  \
    if (b.ok()) CHECK_MESSAGE(b.value() == a, #name ": attrs do not round-trip"); \
  }
#include "longrun/ops/op_list.inc"
  using nlohmann::json;
  CHECK_FALSE(attrs_from_json(OpKind::softmax, json{{"axes", 1}}).ok());     // unknown field
  CHECK_FALSE(attrs_from_json(OpKind::softmax, json{{"scale", 0.1}}).ok());  // not an f32 value
  CHECK(attrs_from_json(OpKind::softmax, json{{"scale", double(0.1f)}}).ok());
  CHECK_FALSE(attrs_from_json(OpKind::softmax, json{{"axis", 1.5}}).ok());  // not an integer
  CHECK_FALSE(attrs_from_json(OpKind::cast, json{{"to", "f64"}}).ok());     // unknown dtype
  CHECK_FALSE(attrs_from_json(OpKind::transpose, json{{"rank", 2}, {"perm", {1}}}).ok());
  CHECK_FALSE(attrs_from_json(OpKind::add, json{{"x", 1}}).ok());
  Result<OpAttrs> pad = attrs_from_json(OpKind::pad, json{{"value", "-inf"}});
  REQUIRE(pad.ok());
  CHECK(std::get<PadAttrs>(pad.value()).value == -kInf);
  // Flags that change an op's inputs or outputs round-trip too (a field missing from a table
  // would come back as its default).
  AxialAttentionAttrs axial{.scale = 0.25f, .segment = 4, .causal = true};
  axial.has_key_padding_mask = axial.has_direct_state = true;
  const std::pair<OpKind, OpAttrs> flags[] = {
      {OpKind::attention, AttentionAttrs{.scale = 0.5f, .causal = true, .with_lse = true}},
      {OpKind::axial_attention, axial}};
  for (const auto& [kind, a] : flags) {
    Result<OpAttrs> back = attrs_from_json(kind, attrs_to_json(a));
    REQUIRE(back.ok());
    CHECK(back.value() == a);
  }
  Result<OpAttrs> sl = attrs_from_json(OpKind::slice, json{{"end", 9223372036854775807ull}});
  REQUIRE(sl.ok());
  CHECK(std::get<SliceAttrs>(sl.value()).end == INT64_MAX);
}

}  // namespace
}  // namespace longrun::conformance
