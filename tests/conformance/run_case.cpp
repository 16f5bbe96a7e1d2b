#include "conformance/run_case.h"

#include <string>

namespace longrun::conformance {
namespace {

struct BackendSlot {
  std::unique_ptr<Backend> backend;
  std::string name;
  BackendOptions options;
};

BackendSlot& backend_slot() {
  static BackendSlot slot;
  return slot;
}

}  // namespace

Backend& conformance_backend() { return *backend_slot().backend; }
const std::string& conformance_backend_name() { return backend_slot().name; }
const BackendOptions& conformance_backend_options() { return backend_slot().options; }
void set_conformance_backend(std::unique_ptr<Backend> backend, std::string name, BackendOptions options) {
  backend_slot() = BackendSlot{std::move(backend), std::move(name), std::move(options)};
}

std::string compare_with_golden(const SafetensorsEntry& expected, std::span<const std::byte> actual,
                                const Tolerance& tol, ErrorStats* stats) {
  return compare_outputs(expected.desc, expected.bytes, actual, tol, stats);
}

CaseOutcome run_case(Backend& backend, const GoldenCase& c, Mode mode) {
  OpCase oc{c.op, c.attrs, {}, {}};
  for (const SafetensorsEntry* e : c.inputs) {
    oc.descs.push_back(e->desc);
    oc.bytes.push_back(e->bytes);
  }
  if (std::string why = mode_skip_reason(oc, mode); !why.empty()) return {true, true, why, {}};
  CaseOutcome out;
  auto fail = [&](std::string m) {
    out.ok = false;
    out.message = std::move(m);
    return out;
  };

  PreparedCase p;
  if (std::string e = prepare_case(backend, oc, mode, &p); !e.empty()) return fail(e);
  if (p.out_desc.dtype() != c.output->desc.dtype() || !p.out_desc.same_shape(c.output->desc))
    return fail("shape inference gives " + p.out_desc.to_string() + ", golden has " +
                c.output->desc.to_string());

  // Two runs into outputs pre-filled with different patterns: an element left unwritten
  // shows up as a difference between them.
  const RunOutcome first = execute_case(backend, oc, p, std::byte{0xA5});
  if (!first.violation.empty()) return fail(first.violation);
  if (!first.status.ok()) return fail("execute failed: " + first.status.to_string());
  const Tolerance tol = tolerance_for(c.op, c.output->desc.dtype());
  if (std::string e = compare_with_golden(*c.output, first.bytes, tol, &out.error); !e.empty())
    return fail(e);
  const RunOutcome second = execute_case(backend, oc, p, std::byte{0x5A});
  if (!second.violation.empty()) return fail("second run: " + second.violation);
  if (!second.status.ok()) return fail("second run: execute failed: " + second.status.to_string());
  if (std::string d = bitwise_difference(p.out_desc, first.bytes, second.bytes); !d.empty())
    return fail("not deterministic: two runs differ: " + d +
                " (an element left unwritten shows up here too)");
  return out;
}

}  // namespace longrun::conformance
