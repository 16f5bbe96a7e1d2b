// The source layouts defined outside mapping.cpp (one file per source family), collected by
// source_layouts(). Internal to tools/convert.
#pragma once

#include <algorithm>

#include "mapping.h"

namespace longrun::convert {

const SourceLayout& fairseq_transformer_layout();  // mapping_fairseq.cpp
const SourceLayout& fairseq_bart_layout();         // mapping_fairseq.cpp
const SourceLayout& flax_combiner_layout();        // mapping_combiner.cpp
const SourceLayout& tf_combiner_layout();          // mapping_combiner.cpp
const SourceLayout& fairseq_lasformer_layout();    // mapping_fairseq.cpp
const SourceLayout& fairseq_roberta_layout();      // mapping_fairseq.cpp
const SourceLayout& hf_bart_model_layout();        // mapping.cpp (the bare BartModel)

inline bool any_starts_with(const SourceShapes& tensors, std::string_view prefix) {
  return std::any_of(tensors.begin(), tensors.end(),
                     [&](const auto& t) { return t.first.starts_with(prefix); });
}

inline const std::vector<int64_t>* shape_of(const SourceShapes& tensors, std::string_view name) {
  for (const auto& t : tensors)
    if (t.first == name) return &t.second;
  return nullptr;
}

// Sets mlm_head (tensors under `head_prefix` present) and add_pooling_layer (pooler.*
// present) unless the config already does (mapping.cpp; the bert / roberta layouts).
Result<std::string> complete_encoder_config(const std::string& config_json, const SourceShapes& names,
                                            std::string_view head_prefix);

}  // namespace longrun::convert
