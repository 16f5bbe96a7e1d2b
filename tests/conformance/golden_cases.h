// Loads the op goldens written by tests/oracles/make_op_goldens.py:
// LONGRUN_GOLDEN_DIR/ops/<op>.safetensors with tensors "<case>/in<j>", "<case>/out0" and the
// metadata "longrun.golden" = JSON list of {"name", "op", "attrs", "inputs"}.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "longrun/ops/attrs.h"
#include "longrun/safetensors.h"
#include "longrun/status.h"

namespace longrun::conformance {

struct GoldenCase {
  std::string name;
  OpKind op = OpKind::matmul;
  OpAttrs attrs;
  std::vector<const SafetensorsEntry*> inputs;  // in0, in1, ... (point into the file)
  const SafetensorsEntry* output = nullptr;     // out0
};

struct GoldenFile {
  std::shared_ptr<SafetensorsFile> file;  // keeps the entries' bytes mapped
  std::vector<GoldenCase> cases;
};

// "<LONGRUN_GOLDEN_DIR>/ops/<op>.safetensors".
std::string golden_path(OpKind op);

// Loads and validates one op's goldens. not_found when the file does not exist; any other
// error (bad metadata, missing tensors, unknown attrs) names the file and the case.
Result<GoldenFile> load_golden_file(OpKind op);

// The op whose op_name() is `name`.
std::optional<OpKind> op_kind_from_name(std::string_view name);

}  // namespace longrun::conformance
