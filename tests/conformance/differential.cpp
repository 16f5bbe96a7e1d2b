#include "conformance/differential.h"

#include "longrun/ops/schema.h"

namespace longrun::conformance {
namespace {

using diff::DiffCase;

// Runs `c` in `mode` on `backend` (fill pattern `fill`); "" or the failure.
std::string run_on(Backend& backend, const OpCase& oc, Mode mode, std::byte fill, RunOutcome* out) {
  PreparedCase p;
  if (std::string e = prepare_case(backend, oc, mode, &p); !e.empty()) return e;
  *out = execute_case(backend, oc, p, fill);
  if (!out->violation.empty()) return out->violation;
  return {};
}

void note_error(DiffReport& rep, const std::string& name, const ErrorStats& e) {
  if (e.norm_err >= rep.worst.norm_err) rep.worst.norm_err = e.norm_err, rep.worst_norm_case = name;
  if (e.elem_err >= rep.worst.elem_err) rep.worst.elem_err = e.elem_err, rep.worst_elem_case = name;
}

}  // namespace

// Whether the 1- and 2-thread outputs of `op` must be bitwise identical. Every cpu kernel
// partitions work so that thread count changes only which thread computes an element,
// never how (README.md); an op found not to would be listed here, and then only the
// contract (same thread count => bitwise) is checked for it.
bool thread_invariant(OpKind) { return true; }

// One differential case. Returns the failures (empty: passed).
std::vector<std::string> run_diff_case(OpKind op, const DiffCase& c, const DiffBackends& b, DiffReport& rep) {
  std::vector<std::string> fails;
  OpCase oc{op, c.attrs, {}, {}};
  for (const diff::HostTensor& t : c.inputs) {
    oc.descs.push_back(t.desc);
    oc.bytes.push_back(t.bytes());
  }
  const std::string under = b.one->description();
  auto fail = [&](const std::string& where, const std::string& what) {
    fails.push_back("[" + where + "] " + what);
  };
  if (!c.may_refuse.empty()) {  // a documented refusal: the backend says why, or runs the case
    PreparedCase p;
    const std::string e = prepare_case(*b.one, oc, Mode::inputs, &p);
    if (e.find("does not support node") != std::string::npos) {
      if (e.find(c.may_refuse) == std::string::npos)
        fail(under, "refused without naming '" + c.may_refuse + "': " + e);
      return fails;
    }
  }

  // The oracle's output.
  RunOutcome want;
  if (std::string e = run_on(*b.reference, oc, Mode::inputs, std::byte{0xA5}, &want); !e.empty()) {
    fail("reference", "generator bug: " + e);
    return fails;
  }
  if (c.expect_error != !want.status.ok()) {
    fail("reference", c.expect_error
                          ? "generator bug: the case should be rejected but runs"
                          : "generator bug: the reference rejects the case: " + want.status.to_string());
    return fails;
  }
  if (c.expect_error) {
    // The backend must reject it too, with the same code, without writing out of bounds.
    for (Backend* be : {b.one, b.two}) {
      if (be == nullptr) continue;
      RunOutcome got;
      ++rep.runs;
      if (std::string e = run_on(*be, oc, Mode::inputs, std::byte{0xA5}, &got); !e.empty())
        fail(be->description(), e);
      else if (got.status.ok())
        fail(be->description(), "accepted a case the reference rejects with: " + want.status.to_string());
      else if (got.status.code() != want.status.code())
        fail(be->description(),
             "rejected with " + got.status.to_string() + ", the reference with " + want.status.to_string());
    }
    return fails;
  }

  std::vector<TensorDesc> outs;
  if (Status st = infer_op(op, c.attrs, oc.descs, &outs); !st.ok() || outs.empty()) {
    fail("reference", "generator bug: " + st.to_string());
    return fails;
  }
  const TensorDesc& od = outs[0];
  const Tolerance tol = tolerance_for(op, od.dtype());
  // `got` within the tolerance of the oracle's output.
  auto check = [&](const std::string& where, const RunOutcome& got) -> bool {
    if (!got.status.ok()) {
      fail(where, "execute failed: " + got.status.to_string());
      return false;
    }
    ErrorStats st;
    if (std::string e = compare_outputs(od, want.bytes, got.bytes, tol, &st); !e.empty()) {
      fail(where, e);
      return false;
    }
    note_error(rep, c.name, st);
    return true;
  };
  // `y` (a further run) ran and is bitwise identical to `x` (a checked run).
  auto same = [&](const std::string& what, const RunOutcome& x, const RunOutcome& y) {
    if (!y.violation.empty()) return fail(what, y.violation);
    if (!y.status.ok()) return fail(what, "execute failed: " + y.status.to_string());
    if (std::string d = bitwise_difference(od, x.bytes, y.bytes); !d.empty())
      fail(what, "not bitwise identical: " + d);
  };

  for (Mode mode : {Mode::inputs, Mode::weights, Mode::inplace}) {
    if (!mode_skip_reason(oc, mode).empty()) continue;
    const std::string m(mode_name(mode));
    Backend* two = b.two;
    if (mode == Mode::inplace) {  // the aliased run, with the most threads there are
      Backend& be = two ? *two : *b.one;
      RunOutcome got;
      ++rep.runs;
      if (std::string e = run_on(be, oc, mode, std::byte{0xA5}, &got); !e.empty())
        fail(m + ", " + be.description(), e);
      else
        check(m + ", " + be.description(), got);
      continue;
    }
    RunOutcome r1;
    ++rep.runs;
    if (std::string e = run_on(*b.one, oc, mode, std::byte{0xA5}, &r1); !e.empty()) {
      fail(m + ", " + under, e);
      continue;
    }
    if (!check(m + ", " + under, r1)) continue;
    if (two == nullptr) {  // no thread counts: the same instance again must give the same bits
      RunOutcome again;
      ++rep.runs;
      if (std::string e = run_on(*b.one, oc, mode, std::byte{0x5A}, &again); !e.empty())
        fail(m + ", second run of " + under, e);
      else
        same(m + ", second run of " + under, r1, again);
      continue;
    }
    // The 2-thread instance: one prepared graph run twice (inputs mode) into outputs
    // pre-filled differently, so an unwritten element shows up as a difference.
    PreparedCase p2;
    if (std::string e = prepare_case(*two, oc, mode, &p2); !e.empty()) {
      fail(m + ", " + two->description(), e);
      continue;
    }
    const RunOutcome a = execute_case(*two, oc, p2, std::byte{0xA5});
    ++rep.runs;
    if (thread_invariant(op)) {
      same(m + ", 1 thread vs 2 threads", r1, a);
    } else {
      if (!a.violation.empty()) {
        fail(m + ", " + two->description(), a.violation);
        continue;
      }
      check(m + ", " + two->description(), a);
    }
    if (mode == Mode::inputs && a.violation.empty() && a.status.ok()) {
      const RunOutcome z = execute_case(*two, oc, p2, std::byte{0x5A});
      ++rep.runs;
      same(m + ", second run with 2 threads", a, z);
    }
  }
  return fails;
}

}  // namespace longrun::conformance
