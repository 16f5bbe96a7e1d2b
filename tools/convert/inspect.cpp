#include "inspect.h"

#include <map>
#include <nlohmann/json.hpp>

namespace longrun::convert {

std::string inspect_report(const SourceCheckpoint& src) {
  std::string r = "format: " + src.format + "\n";
  for (const std::string& f : src.files) r += "file: " + f + "\n";
  for (const auto& [k, v] : src.metadata) r += "metadata: " + k + " = " + v + "\n";
  if (!src.config_json.empty()) r += "config.json: " + std::to_string(src.config_json.size()) + " bytes\n";
  uint64_t bytes = 0;
  std::map<std::string, int> storages;
  for (const SourceTensor& t : src.tensors) ++storages[t.storage_id];
  // A native file's quantized weights (docs/checkpoints.md#quantized-weights).
  std::map<std::string, std::string> quantized;
  if (const auto q = src.metadata.find("longrun.quantization"); q != src.metadata.end()) {
    const auto j = nlohmann::json::parse(q->second, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("weights") && j["weights"].is_object())
      for (const auto& [name, layout] : j["weights"].items())
        quantized[name] = layout.is_string() ? layout.get<std::string>() : layout.dump();
    r += "quantized: " + std::to_string(quantized.size()) + " weights, int8 per output channel\n";
  }
  r += "tensors: " + std::to_string(src.tensors.size()) + "\n";
  for (const SourceTensor& t : src.tensors) {
    std::string shape;
    for (size_t i = 0; i < t.sizes.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.sizes[i]);
    r += "  " + t.name + "  " + std::string(source_dtype_name(t.dtype)) + "[" + shape + "]";
    if (!t.contiguous()) r += "  strided";
    if (t.offset) r += "  offset " + std::to_string(t.offset);
    if (storages[t.storage_id] > 1) r += "  shares storage " + t.storage_id;
    if (const auto q = quantized.find(t.name); q != quantized.end())
      r += "  quantized int8 " + q->second + ", scales " + t.name + ".scale";
    r += "\n";
    bytes += uint64_t(t.numel()) * uint64_t(source_dtype_size(t.dtype));
  }
  r += "tensor bytes: " + std::to_string(bytes) + "\n";
  for (const std::string& n : src.notes) r += "note: " + n + "\n";
  return r;
}

}  // namespace longrun::convert
