// The conversion itself: source tensors -> the native tensor set of one architecture
// (names, shapes from the family's parameter table for the given config), dtype policy,
// metadata (format, arch, config, source sha256, converter version), atomic write.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "longrun/dtype.h"
#include "mapping.h"
#include "source.h"

namespace longrun::convert {

inline constexpr const char* kConverterVersion = "longrun-convert 0.1";

struct ConvertOptions {
  std::string arch;
  std::string layout;          // a source layout name; empty = the first that maps to `arch`
  std::string config_json;     // the family's config (merged --config and --set)
  std::optional<DType> dtype;  // f32/f16/bf16 for every float weight; nullopt = keep (f64 -> f32)
  std::string source_label;    // e.g. "pytorch-zip:checkpoint.pt"
  std::vector<std::pair<std::string, std::string>> source_sha256;  // (file name, hex digest)
  bool progress = false;                                           // a progress bar on stderr
  // Tokenizer::to_metadata() of the source's tokenizer, stored under longrun.tokenizer so
  // the model file is self-contained (empty: none).
  std::string tokenizer_metadata;
};

struct ConvertSummary {
  std::string layout;
  int mapped = 0;
  std::vector<std::string> ignored;  // "name: reason"
  std::vector<std::string> retied;   // "target <- source"
  // Official config keys dropped as not affecting inference, and official keys translated
  // ("'key' value: reason"; official_config.h).
  std::vector<std::string> config_notes;
  int dtype_conversions = 0;
  uint64_t bytes = 0;  // tensor bytes written
  std::map<std::string, std::string> metadata;
};

// Checks and maps `src` (every required tensor exactly once with the configured shape, no
// unknown tensors) and writes `out_path`. All problems are reported in one Status.
Result<ConvertSummary> convert_checkpoint(const SourceCheckpoint& src, const ConvertOptions& options,
                                          const std::string& out_path);

// The config JSON from a --config file's text (may be empty) with `key=value` overrides;
// a value that parses as JSON is used as such, anything else as a string.
Result<std::string> merge_config(const std::string& config_text, const std::vector<std::string>& sets);

// Float conversion between source and native dtypes (round to nearest even).
std::vector<std::byte> convert_floats(std::span<const std::byte> in, SourceDType from, DType to);

}  // namespace longrun::convert
