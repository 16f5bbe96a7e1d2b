// Source layouts -> native tensor names: one data table per source layout. The native names
// and shapes come from the model family's parameter table (models/registry.h), so a mapping
// only says how the source names differ (wrapper prefixes, renames), what may be ignored
// (with a reason) and which tied tensors are re-created from their source.
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace longrun::convert {

struct IgnoreRule {
  std::string_view prefix;  // matched against the source name as stored (before unwrapping)
  std::string_view reason;
};

struct TieRule {
  std::string_view target;  // native name that may be absent from the source ...
  std::string_view source;  // ... and is then a copy of this native tensor
};

struct SourceLayout {
  std::string_view name;  // e.g. "fourier-lra-official"
  std::string_view arch;  // the native architecture it maps to
  std::string_view description;
  // Optional prefixes stripped in this order, each at most once ("model_state_dict." then
  // "module."): the official wrapper dict and DataParallel's prefix.
  std::vector<std::string_view> wrappers;
  std::vector<IgnoreRule> ignore;
  std::vector<TieRule> ties;
};

std::span<const SourceLayout> source_layouts();
// The layouts that map to `arch` (empty when none).
std::vector<const SourceLayout*> layouts_for_arch(std::string_view arch);
const SourceLayout* find_layout(std::string_view name);

}  // namespace longrun::convert
