// arch "lasformer": Lasformer (docs/models.md#lasformer) = the "transformer" family (fields,
// names, semantics) with top-k key selection in encoder self-, decoder self- and cross-
// attention (seq2seq/key_selection.h), plus the fields selection_group_size (r, 3),
// selection_dim (ds, 64), selection_ratio (rho in (0, 1], 0.05), selection_min_keys
// (k_min, 10), selection_bias (false). Extra parameters at the lowest layer i of every
// group (i % r == 0), per attention a in {encoder.layers.{i}.self_attn,
// decoder.layers.{i}.self_attn, decoder.layers.{i}.encoder_attn}:
//   a.select_q.weight [ds, D]  a.select_k.weight [ds, D]  (+ .bias [ds] with selection_bias)
// rho is a config field (one for all groups), not a tensor: k sets the graph's shapes.
// Generation: the step's query selects among the cached selection keys of its group
// (GenerationSpec: past_select / cross_select caches), as row t of the full forward.
// The encoder-decoder (seq2seq/encoder_decoder.h) applies the selection when
// Seq2SeqSpec::selection is enabled: group sharing and the generation caches live there.
#pragma once

#include <memory>
#include <string_view>

#include "common/architecture.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_lasformer_config(std::string_view config_json);

}  // namespace longrun::models
