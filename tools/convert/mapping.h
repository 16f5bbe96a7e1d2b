// Source layouts -> native tensor names: one data table per source layout. The native names
// and shapes come from the model family's parameter table (models/registry.h), so a mapping
// only says how the source names differ (wrapper prefixes, renames), what may be ignored
// (with a reason), which source tensors are tied copies of a native one, and which config
// fields follow from the tensors present.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "longrun/status.h"

namespace longrun::convert {

using SourceShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

struct IgnoreRule {
  std::string_view prefix;  // matched against the source name as stored and as unwrapped
  std::string_view reason;
};

struct TieRule {
  std::string_view target;  // native name that may be absent from the source ...
  std::string_view source;  // ... and is then a copy of this native tensor
  bool transpose = false;   // ... or of its transpose (2-D; TF's head is the embedding table^T)
};

// What a layout's rename hook makes of one (unwrapped, non-ignored) source name.
struct Renamed {
  std::string name;  // the native name (the input itself when no rule applies)
  // Non-empty: the family has no slot for this tensor (e.g. a TF bias the JAX model lacks);
  // it is accepted only when every element is zero, then dropped and reported with this reason.
  std::string zero_only;
};

// Segment-wise prefix rename: `from` and `to` are dotted prefixes where "*" matches (and
// passes on, in order) one segment; the name's remaining segments are appended. nullopt when
// `from` does not match. ("layers.*.fc1", "encoder.layer.*.intermediate.dense") turns
// "layers.3.fc1.weight" into "encoder.layer.3.intermediate.dense.weight".
std::optional<std::string> rename_prefix(std::string_view name, std::string_view from, std::string_view to);

// A source tensor (unwrapped name) that the family stores only once, as `target`: when the
// source also holds `target` the copy must be byte-identical and is dropped (reported);
// when it does not, the copy provides it. Applies only when `copy` is not itself in the
// configured parameter table (e.g. an untied output projection); of several rules for one
// copy the first whose target is in the table is used.
struct TiedCopyRule {
  std::string_view copy;
  std::string_view target;
};

struct SourceLayout {
  std::string_view name;                // e.g. "fourier-lra-official"
  std::vector<std::string_view> archs;  // the native architectures it maps to
  std::string_view description;
  // Optional prefixes stripped in this order, each at most once ("model_state_dict." then
  // "module."): the official wrapper dict and DataParallel's prefix.
  std::vector<std::string_view> wrappers;
  std::vector<IgnoreRule> ignore;
  std::vector<TieRule> ties;
  std::vector<TiedCopyRule> tied_copies;
  // Fills config fields the source's tensors decide (e.g. whether an MLM head is present,
  // vocabulary sizes) when the config does not set them; `tensors` are the unwrapped,
  // non-ignored (name, shape) pairs.
  Result<std::string> (*complete_config)(const std::string& config_json,
                                         const SourceShapes& tensors) = nullptr;
  // Prepended to every unwrapped name (fairseq BART's "encoder.*" -> native "model.encoder.*").
  std::string_view add_prefix;
  // Native tensors the source format does not have and whose value is zero (fairseq BART has
  // no final_logits_bias): filled with f32 zeros when absent, reported as re-tied.
  std::vector<std::string_view> zeros_if_absent;
  // Source name -> native name, given the config (--config / --set / the source's own), run
  // after the wrappers and ignore rules and before add_prefix. An error (e.g. a tensor the
  // family cannot represent) is reported with the other problems.
  Result<Renamed> (*rename)(std::string_view name, const std::string& config_json) = nullptr;
};

std::span<const SourceLayout> source_layouts();
// The layouts that map to `arch` (empty when none).
std::vector<const SourceLayout*> layouts_for_arch(std::string_view arch);
const SourceLayout* find_layout(std::string_view name);

// The native architecture of a Hugging Face config.json: model_type "bert" / "roberta" /
// "bart", made "fourier-*" when the config (after --set) has filter_layers (bert, roberta)
// or dct_layers (bart); or of fairseq hyper-parameters: arch "transformer*" -> transformer,
// "lasformer*" -> lasformer, "bart*" -> (fourier-)bart, "roberta*" -> (fourier-)roberta.
// An error names the model_type / arch found.
Result<std::string> detect_arch(const std::string& config_json);

}  // namespace longrun::convert
