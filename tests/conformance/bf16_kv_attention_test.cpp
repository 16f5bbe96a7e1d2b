// attention and sparse_attention with bf16 K and V (a bf16 KV cache; attrs.h): the
// differential generators' bf16kv_* cases (odd head dims, Nk around the 64-key block, causal
// decode and Nq > Nk, key padding with a fully padded batch, large logits, sparse index rows
// with unused and repeated slots, kk and hd across the vector widths).
//   bf16kv.widening: on the backend under test, bf16 K and V give bit for bit the output of
//     the same values widened to f32 K and V. A bf16 value widens exactly, so this is the
//     whole contract of the bf16 path (it may differ from the f32 path only in what it
//     loads); its error against the reference is then the f32 kernel's, which
//     differential.attention / differential.sparse_attention check on the same cases under
//     the f32 bounds of tolerances.cpp. Also reported here: the worst error of the bf16
//     cases against the reference backend (on bf16 inputs).
// A backend that refuses bf16 K and V (cuda: unsupported) is checked to say so, naming the op.
//   bf16kv.session: a bf16 session's sparse_attention rounds f32 K and V to bf16 (below).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "conformance/case_runner.h"
#include "conformance/diff_case.h"
#include "conformance/run_case.h"
#include "conformance/tolerances.h"
#include "longrun/backend.h"
#include "longrun/dtype.h"
#include "longrun/ops/schema.h"

namespace longrun::conformance {
namespace {

using diff::DiffCase;
using diff::HostTensor;

OpCase op_case(OpKind op, const DiffCase& c, const std::vector<HostTensor>& inputs) {
  OpCase oc{op, c.attrs, {}, {}};
  for (const HostTensor& t : inputs) {
    oc.descs.push_back(t.desc);
    oc.bytes.push_back(t.bytes());
  }
  return oc;
}

// The run of `oc` on `backend` (inputs mode).
RunOutcome run(Backend& backend, const OpCase& oc) {
  PreparedCase p;
  const std::string why = prepare_case(backend, oc, Mode::inputs, &p);
  RunOutcome r;
  if (!why.empty()) {
    r.status = unsupported(why);
    return r;
  }
  r = execute_case(backend, oc, p, std::byte{0x7f});
  REQUIRE_MESSAGE(r.violation.empty(), r.violation);
  return r;
}

// A bf16 tensor's values in f32 (exact).
HostTensor widened(const HostTensor& t) {
  HostTensor w = diff::zeros(DType::f32, t.desc.dims());
  for (int64_t i = 0; i < t.desc.numel(); ++i) diff::set(w, i, diff::get(t, i));
  return w;
}

// The worst error seen against the reference, and the case it came from.
struct Worst {
  ErrorStats stats;
  std::string case_name;
};

// Checks one case: `got` (the bf16 path) gives bit for bit `want`'s output, or the same error
// status where the case expects one; when `reference` is given, `got` is also compared with
// its run of `given` under the op's f32 bounds (recorded in `worst`). Returns whether the case
// produced an output.
bool check_same_bits(OpKind op, const DiffCase& c, const OpCase& given, const RunOutcome& got,
                     const RunOutcome& want, Backend* reference, const char* what, Worst* worst) {
  if (c.expect_error) {
    CHECK_FALSE(got.status.ok());
    CHECK(got.status.code() == want.status.code());
    return false;
  }
  REQUIRE_MESSAGE(got.status.ok(), got.status.to_string());
  REQUIRE_MESSAGE(want.status.ok(), want.status.to_string());
  std::vector<TensorDesc> outs;
  REQUIRE(infer_op(op, c.attrs, given.descs, &outs).ok());
  const std::string diff = bitwise_difference(outs[0], want.bytes, got.bytes);
  CHECK_MESSAGE(diff.empty(), what << ": " << diff);
  if (reference != nullptr) {
    const RunOutcome oracle = run(*reference, given);
    REQUIRE_MESSAGE(oracle.status.ok(), oracle.status.to_string());
    ErrorStats e;
    const std::string far =
        compare_outputs(outs[0], oracle.bytes, got.bytes, tolerance_for(op, DType::f32), &e);
    CHECK_MESSAGE(far.empty(), "against the reference: " << far);
    if (e.norm_err >= worst->stats.norm_err) worst->stats.norm_err = e.norm_err, worst->case_name = c.name;
    worst->stats.elem_err = std::max(worst->stats.elem_err, e.elem_err);
  }
  return true;
}

void check_op(OpKind op) {
  Backend& backend = conformance_backend();
  const bool is_reference = conformance_backend_name().empty() || conformance_backend_name() == "reference";
  std::unique_ptr<Backend> reference;
  if (!is_reference) {
    auto r = create_backend("reference");
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    reference = std::move(r).value();
  }
  int n = 0;
  Worst worst;
  for (const DiffCase& c : diff::generate_cases(op)) {
    if (!c.name.starts_with("bf16kv_")) continue;
    CAPTURE(c.name);
    REQUIRE(c.inputs[1].desc.dtype() == DType::bf16);
    REQUIRE(c.inputs[2].desc.dtype() == DType::bf16);
    std::vector<HostTensor> wide = c.inputs;
    wide[1] = widened(c.inputs[1]);
    wide[2] = widened(c.inputs[2]);
    const OpCase bf = op_case(op, c, c.inputs), f32 = op_case(op, c, wide);
    const RunOutcome got = run(backend, bf);
    if (got.status.code() == StatusCode::unsupported) {  // a backend without bf16 K/V
      CHECK_MESSAGE(conformance_backend_name() == "cuda", got.status.to_string());
      CHECK(got.status.message().find(std::string(op_name(op))) != std::string::npos);
      CHECK(got.status.message().find("bf16") != std::string::npos);
      continue;
    }
    const RunOutcome want = run(backend, f32);
    n += check_same_bits(op, c, bf, got, want, reference.get(), "bf16 K/V vs the same values in f32", &worst);
  }
  std::printf(
      "bf16kv.%s: %d cases bit for bit as on widened f32 K/V; against the reference: norm %.3g (%s), "
      "elem %.3g\n",
      std::string(op_name(op)).c_str(), n, worst.stats.norm_err, worst.case_name.c_str(),
      worst.stats.elem_err);
}

TEST_CASE("bf16kv.widening: attention with bf16 K/V equals attention on the widened values") {
  check_op(OpKind::attention);
}

TEST_CASE("bf16kv.widening: sparse_attention with bf16 K/V equals sparse_attention on the widened values") {
  check_op(OpKind::sparse_attention);
}

// A bf16 session's sparse_attention (docs/cpu-kernels.md#bf16-k-and-v): f32 K and V are
// rounded to bf16 and the op runs on the rounded values. On every sparse_attention case with
// f32 K and V, a bf16 instance of the backend under test gives bit for bit the output of the
// f32 instance on the same case with K and V rounded (f32_to_bf16) and passed as bf16; a
// case whose K and V are bf16 already is run as given. The cpu's bf16 session is also compared
// with the reference backend's bf16 session under the f32 bounds (both compute on the same
// rounded values). A backend without bf16 sessions (cuda; cpu at the scalar level) says so.
HostTensor rounded(const HostTensor& t) {
  if (t.desc.dtype() != DType::f32) return t;
  HostTensor r = diff::zeros(DType::bf16, t.desc.dims());
  const auto* src = reinterpret_cast<const float*>(t.buf->data());
  auto* dst = reinterpret_cast<uint16_t*>(r.buf->data());
  for (int64_t i = 0; i < t.desc.numel(); ++i) dst[i] = f32_to_bf16(src[i]);
  return r;
}

TEST_CASE("bf16kv.session: a bf16 session's sparse_attention equals the op on K and V rounded to bf16") {
  const OpKind op = OpKind::sparse_attention;
  Backend& f32_backend = conformance_backend();
  const std::string name = conformance_backend_name().empty() ? "reference" : conformance_backend_name();
  BackendOptions options = conformance_backend_options();
  options.precision = Precision::bf16;
  auto created = create_backend(name, options);
  if (!created.ok()) {
    CHECK_MESSAGE(created.status().code() == StatusCode::unsupported, created.status().to_string());
    std::printf("bf16kv.session: no bf16 sessions here: %s\n", created.status().to_string().c_str());
    return;
  }
  Backend& bf16_backend = **created;
  std::unique_ptr<Backend> reference;
  if (name != "reference") {
    BackendOptions ro;
    ro.precision = Precision::bf16;
    auto r = create_backend("reference", ro);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    reference = std::move(r).value();
  }
  int n = 0, rounded_cases = 0;
  Worst worst;
  for (const DiffCase& c : diff::generate_cases(op)) {
    CAPTURE(c.name);
    std::vector<HostTensor> r = c.inputs;
    r[1] = rounded(c.inputs[1]);
    r[2] = rounded(c.inputs[2]);
    const OpCase given = op_case(op, c, c.inputs), as_bf16 = op_case(op, c, r);
    const RunOutcome got = run(bf16_backend, given);
    const RunOutcome want = run(f32_backend, as_bf16);
    if (!check_same_bits(op, c, given, got, want, reference.get(), "bf16 session vs K/V rounded to bf16",
                         &worst))
      continue;
    ++n;
    rounded_cases += c.inputs[1].desc.dtype() == DType::f32;
  }
  CHECK(rounded_cases > 0);
  std::printf(
      "bf16kv.session: %d sparse_attention cases (%d with f32 K/V) bit for bit as on K/V rounded to bf16; "
      "against the reference's bf16 session: norm %.3g (%s), elem %.3g\n",
      n, rounded_cases, worst.stats.norm_err, worst.case_name.c_str(), worst.stats.elem_err);
}

}  // namespace
}  // namespace longrun::conformance
