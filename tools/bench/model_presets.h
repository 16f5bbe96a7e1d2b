// The named model benchmarks of `longrun-bench models`: one row per preset, each an arch of
// models/registry.cpp with a longrun.config, the default sequence lengths and the preset it
// is compared with in the same run (its baseline, e.g. the same model without filter layers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace longrun::bench {

struct ModelPreset {
  std::string_view name;      // what --preset selects and the table/JSON "model" field shows
  std::string_view arch;      // longrun.arch
  std::string_view config;    // longrun.config JSON
  std::string_view baseline;  // name of the preset to compare with ("" = none)
  std::string_view ns;        // default sequence lengths, comma-separated
  std::string_view summary;   // one line for --help
};

std::vector<ModelPreset> model_presets();
// The scaling sweep's presets (`longrun-bench models --scale`): each family and its baseline
// at N = 4096 ... 65536, configs with "@N@" for every length field (config_at_length).
std::vector<ModelPreset> scale_presets();
// `config` with every "@N@" replaced by n.
std::string config_at_length(std::string_view config, int64_t n);
const ModelPreset* find_preset(std::string_view name);

}  // namespace longrun::bench
