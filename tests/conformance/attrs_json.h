// JSON <-> OpAttrs for the conformance goldens (tests/oracles/make_op_goldens.py writes the
// JSON). Field names are exactly those of ops/include/longrun/ops/attrs.h; enums are strings
// ("f16", "gelu_tanh", "matrix"); float fields are numbers that must be exact f32 values, or
// "inf" / "-inf" / "nan"; perm/dims are arrays of `rank` entries. A missing field keeps the
// struct's default; an unknown field, a wrong JSON type or an out-of-range value is an error.
#pragma once

#include <nlohmann/json.hpp>

#include "longrun/ops/attrs.h"
#include "longrun/status.h"

namespace longrun::conformance {

// Parses `j` (a JSON object) into the attrs struct of `kind`.
Result<OpAttrs> attrs_from_json(OpKind kind, const nlohmann::json& j);

// Every field of the attrs of `kind`, for messages and round-trip checks.
nlohmann::json attrs_to_json(const OpAttrs& attrs);

}  // namespace longrun::conformance
