#include "random_model.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_case.h"
#include "longrun/safetensors.h"

namespace longrun::bench {

Result<RandomModel> random_model(const std::string& arch, const std::string& config_json, uint32_t seed,
                                 const std::string& save_path) {
  LR_ASSIGN_OR_RETURN(const std::vector<ModelParameter> table, model_parameters(arch, config_json));
  std::vector<BufferPtr> buffers;
  std::vector<SafetensorsWriteEntry> entries;
  for (size_t i = 0; i < table.size(); ++i) {
    const ModelParameter& p = table[i];
    const TensorDesc desc(DType::f32, p.dims);
    const bool table_like = p.name.find("embedding") != std::string::npos;
    const float a = p.dims.size() >= 2 && !table_like ? float(1.0 / std::sqrt(double(p.dims.back())))
                    : table_like                      ? 1.0f
                                                      : 0.1f;
    buffers.push_back(random_f32(desc.numel(), seed + uint32_t(i) * 7919u, -a, a));
    entries.push_back({p.name, desc, {buffers.back()->data(), size_t(desc.nbytes())}});
  }
  const std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"longrun.format", "1"}, {"longrun.arch", arch}, {"longrun.config", config_json}};
  // Loaded from a file as a deployment loads it (mmap), so resident memory is measured the
  // same way: a temporary file, unlinked once mapped, unless --save-models keeps one.
  const std::string path =
      !save_path.empty() ? save_path
                         : (std::filesystem::temp_directory_path() /
                            ("longrun-bench-" + std::to_string(::getpid()) + "-" + arch + ".safetensors"))
                               .string();
  LR_RETURN_IF_ERROR(write_safetensors(path, entries, meta));
  buffers.clear();
  RandomModel r;
  auto model = Model::load(path);
  if (save_path.empty()) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  if (!model.ok()) return model.status();
  r.model = std::move(model).value();
  const nlohmann::json cfg = nlohmann::json::parse(config_json, nullptr, false);
  auto field = [&cfg](const char* key, int64_t fallback) {
    return cfg.is_object() && cfg.contains(key) && cfg[key].is_number_integer() ? cfg[key].get<int64_t>()
                                                                                : fallback;
  };
  r.vocab_size = field("vocab_size", field("src_vocab_size", 0));
  r.decoder_vocab_size = field("tgt_vocab_size", r.vocab_size);
  return r;
}

}  // namespace longrun::bench
