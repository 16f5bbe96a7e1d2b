// convert_file: the whole input-to-native-file conversion (convert_file.h).
#include "convert_file.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fairseq.h"
#include "longrun/tokenizer.h"
#include "mapping.h"
#include "readers.h"
#include "sha256.h"

namespace longrun::convert {

namespace {

bool has_tokenizer_files(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const char* f : {"tokenizer.json", "vocab.txt", "vocab.json"})
    if (std::filesystem::is_regular_file(dir / f, ec)) return true;
  return false;
}

// The tokenizer to embed: --tokenizer DIR, else INPUT's own directory when it holds tokenizer
// files, else the one a native input already carries. A tokenizer that is there but does not
// parse is an error (never silently dropped).
Result<std::string> tokenizer_metadata(const std::string& input, const std::string& dir, bool none,
                                       const std::map<std::string, std::string>& source_metadata) {
  if (none) return std::string();
  std::error_code ec;
  std::string from = dir;
  if (from.empty() && std::filesystem::is_directory(input, ec) && has_tokenizer_files(input)) from = input;
  if (!from.empty()) {
    auto t = Tokenizer::from_directory(from);
    if (!t.ok()) return Status(t.status().code(), "tokenizer in " + from + ": " + t.status().message());
    return t->to_metadata();
  }
  auto it = source_metadata.find(std::string(kTokenizerMetadataKey));
  if (it != source_metadata.end()) {
    LR_RETURN_IF_ERROR(Tokenizer::from_metadata(it->second).status());
    return it->second;
  }
  return std::string();
}

Status usage(bool* flag, Status s) {
  if (flag != nullptr) *flag = true;
  return s;
}

}  // namespace

Result<ConvertFileResult> convert_file(const std::string& input, const std::string& output,
                                       const ConvertFileOptions& o, bool* usage_error) {
  if (usage_error != nullptr) *usage_error = false;
  const std::string& from = o.from;
  if (from != "auto" && from != "hf" && from != "pytorch" && from != "safetensors" && from != "fairseq" &&
      from != "flax")
    return usage(usage_error,
                 invalid_argument("from must be auto, hf, pytorch, safetensors, fairseq or flax, found '" +
                                  from + "'"));
  if (o.dtype && !dtype_is_float(*o.dtype))
    return usage(usage_error, invalid_argument("dtype must be f32, f16 or bf16"));
  if (output.empty()) return usage(usage_error, invalid_argument("no output file"));
  if (!o.quantize.empty() && o.quantize != "int8")
    return usage(usage_error, invalid_argument("quantize must be int8, found '" + o.quantize + "'"));

  ConvertFileResult result;
  Result<SourceCheckpoint> src = invalid_argument("no input read");
  bool from_fairseq = false;
  if (from == "fairseq") {
    LR_ASSIGN_OR_RETURN(auto f, read_fairseq(input, o.read_options));
    f.source.config_json = f.hyperparameters_json;
    src = std::move(f.source);
    from_fairseq = true;
    result.fairseq_dropped = f.dropped;
  } else {
    src = read_checkpoint(input, from, o.read_options);
    if (!src.ok()) return src.status();
  }

  if (src->metadata.contains("longrun.quantization"))
    return invalid_argument(input +
                            ": holds quantized weights (metadata 'longrun.quantization'); convert from "
                            "the unquantized source instead");

  std::string config_text = src->config_json;
  if (o.config_json) {
    config_text = *o.config_json;
  } else if (!o.config_path.empty()) {
    auto text = read_json_file(o.config_path);
    if (!text.ok()) return text.status().with_context("config " + o.config_path);
    config_text = std::move(*text);
  } else if (config_text.empty()) {
    auto it = src->metadata.find("longrun.config");
    if (it != src->metadata.end()) config_text = it->second;
  }
  auto config = merge_config(config_text, o.sets);
  if (!config.ok()) return usage(usage_error, config.status());

  std::string arch = o.arch;
  if (arch.empty()) {
    auto it = src->metadata.find("longrun.arch");
    if (it != src->metadata.end()) {
      arch = it->second;
    } else if (!config_text.empty()) {
      auto detected = detect_arch(*config);
      if (!detected.ok()) return usage(usage_error, detected.status());
      arch = *detected;
    } else {
      return usage(usage_error, invalid_argument("the architecture (--arch) is required for this input"));
    }
  }
  std::string layout = o.layout;
  if (from_fairseq && layout.empty()) {  // the fairseq-* layout of the arch (hf-bart also maps bart)
    for (const SourceLayout* l : layouts_for_arch(arch))
      if (l->name.starts_with("fairseq-") && layout.empty()) layout = std::string(l->name);
    if (layout.empty())
      return usage(usage_error, invalid_argument("no fairseq layout maps to architecture '" + arch + "'"));
  }

  ConvertOptions options;
  options.arch = arch;
  options.layout = layout;
  options.config_json = *config;
  options.dtype = o.dtype;
  options.source_label = src->format + ":" + std::filesystem::path(input).filename().string();
  options.progress = o.progress;
  for (const std::string& f : src->files) {
    LR_ASSIGN_OR_RETURN(std::string digest, sha256_file(f));
    options.source_sha256.emplace_back(std::filesystem::path(f).filename().string(), digest);
  }
  LR_ASSIGN_OR_RETURN(options.tokenizer_metadata,
                      tokenizer_metadata(input, o.tokenizer_dir, o.no_tokenizer, src->metadata));
  LR_ASSIGN_OR_RETURN(result.summary, convert_checkpoint(*src, options, output));
  if (!o.quantize.empty()) {
    // The converted file is rewritten in place; a failure removes it rather than leaving an
    // unquantized file under the name asked for.
    bool no_linear = false;
    auto q = quantize_native_file(output, output, &no_linear);
    if (!q.ok()) {
      std::error_code ec;
      std::filesystem::remove(output, ec);
      if (no_linear) return usage(usage_error, q.status());
      return q.status();
    }
    result.quantized = *q;
  }
  result.arch = arch;
  result.tokenizer_metadata = options.tokenizer_metadata;
  return result;
}

}  // namespace longrun::convert
