// One whole conversion, input path to native model file: read the source (any --from
// format), resolve config, architecture and layout, hash the source files, pick the
// tokenizer, convert and write. longrun-convert's main() parses flags into these options;
// the Python package (python/) calls it as longrun.convert().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "convert.h"
#include "quantize.h"
#include "source.h"

namespace longrun::convert {

struct ConvertFileOptions {
  std::string from = "auto";               // auto, hf, pytorch, safetensors, fairseq, flax
  std::string arch;                        // empty: the source's longrun.arch, else detected from its config
  std::string layout;                      // empty: the first that maps to arch (fairseq: the fairseq-* one)
  std::string config_path;                 // a config JSON file replacing the source's config (empty: none)
  std::optional<std::string> config_json;  // the same as text (wins over config_path)
  std::vector<std::string> sets;           // key=value overrides (merge_config)
  std::optional<DType> dtype;              // f32/f16/bf16 for every float weight
  std::string quantize;                    // "int8": linear-layer weights quantized (quantize.h); empty: none
  std::string tokenizer_dir;               // empty: the input directory's own, or the source's
  bool no_tokenizer = false;
  ReadOptions read_options;
  bool progress = false;  // a progress bar on stderr
};

struct ConvertFileResult {
  std::string arch;
  ConvertSummary summary;
  std::vector<std::string> fairseq_dropped;  // tensors the fairseq reader left out
  std::string tokenizer_metadata;            // what was embedded (empty: none)
  std::optional<QuantizeSummary> quantized;  // with --quantize
};

// Errors are Status as usual; *usage_error (when given) is set for the ones that are a
// problem with the options (bad --from, dtype, config override, architecture), not the input.
Result<ConvertFileResult> convert_file(const std::string& input, const std::string& output,
                                       const ConvertFileOptions& options, bool* usage_error = nullptr);

}  // namespace longrun::convert
