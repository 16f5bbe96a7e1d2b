// arch "lasformer": the "transformer" fields (seq2seq/transformer.cpp) plus the key-selection
// fields (lasformer.h).
#include "lasformer/lasformer.h"

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "seq2seq/encoder_decoder.h"
#include "seq2seq/families.h"
#include "seq2seq/key_selection.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_lasformer_config(std::string_view config_json) {
  LR_ASSIGN_OR_RETURN(ConfigReader r, ConfigReader::parse(config_json, "lasformer config"));
  nlohmann::json j;
  LR_ASSIGN_OR_RETURN(Seq2SeqSpec s, read_transformer_fields(r, "lasformer", &j));
  SelectionSpec& sel = s.selection;
  sel.enabled = true;
  LR_ASSIGN_OR_RETURN(sel.group_size, r.integer_or("selection_group_size", 3, 1, 1024));
  LR_ASSIGN_OR_RETURN(sel.dim, r.integer_or("selection_dim", 64, 1, int64_t(1) << 20));
  LR_ASSIGN_OR_RETURN(sel.ratio, r.number_or("selection_ratio", 0.05, 0.0, 1.0));
  LR_ASSIGN_OR_RETURN(sel.min_keys, r.integer_or("selection_min_keys", 10, 1, int64_t(1) << 24));
  LR_ASSIGN_OR_RETURN(sel.bias, r.boolean_or("selection_bias", false));
  if (sel.ratio <= 0.0)
    return r.error("selection_ratio", "expected a fraction in (0, 1], found " + std::to_string(sel.ratio));
  LR_RETURN_IF_ERROR(r.finish());
  j["selection_group_size"] = sel.group_size;
  j["selection_dim"] = sel.dim;
  j["selection_ratio"] = sel.ratio;
  j["selection_min_keys"] = sel.min_keys;
  j["selection_bias"] = sel.bias;
  s.config_json = j.dump();
  return make_encoder_decoder(std::move(s));
}

}  // namespace longrun::models
