// Generation for decoder-only causal LMs (arch "combiner" with causal = true): the same
// search rules as the encoder-decoders (seq2seq/beam_search.h, longrun/models/generate.h),
// each step recomputing the full causal model on prompt + generated tokens (no KV cache yet).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "longrun/models/generate.h"

namespace longrun::models {

struct CausalLmSpec {
  int64_t vocab = 0;
  int64_t max_len = 0;  // prompt + generated tokens never exceed it
  int64_t pad = 0;      // banned from generation
  int64_t eos = 1;      // default end token (GenerateOptions::eos_token_id overrides)
};

// nullopt when `model` is not a decoder-only LM; unsupported for a bidirectional combiner.
Result<std::optional<CausalLmSpec>> causal_lm_spec(const Model& model);

// `full` is a session over the model's forward graph (input_ids only).
Result<GenerateResult> generate_causal_lm(const CausalLmSpec& spec, Session& full,
                                          const TensorView& input_ids, const GenerateOptions& options);

// Element i of an integer (or 0/1 float) tensor as int64.
Result<int64_t> int_at(const TensorView& v, int64_t i);

}  // namespace longrun::models
