// The official repositories' own configs -> the families' longrun.config fields
// (docs/checkpoints.md#official-configs). Runs on the merged --config / --set JSON before any
// layout, so rename hooks, config completion and the family's strict parser all see longrun
// names:
//   fourier-lra  the LRA code's model_config (lra_config.py "model" dict as run_tasks.py
//                completes it: layers, dct_percentage, attn_type, mixed_precision, ...)
//   fastformer   wuch15/Fastformer's fastformer.json as shipped (enable_fp16, ...)
//   combiner     the TransformerConfig fields of combiner/jax main.py plus its -model choice
// Keys that do not change inference are dropped and listed in `notes`; keys whose value
// contradicts what the family implements are refused with an error naming the key. A config
// already in longrun form passes unchanged; other families pass unchanged.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "longrun/status.h"

namespace longrun::convert {

struct TranslatedConfig {
  std::string config_json;         // longrun field names (unknown keys left for the family parser)
  std::vector<std::string> notes;  // "'key': reason" for each official key accepted and dropped
};

Result<TranslatedConfig> translate_official_config(std::string_view arch, const std::string& config_json);

}  // namespace longrun::convert
