// Generation for decoder-only causal LMs (arch "combiner" with causal = true): the same
// search rules as the encoder-decoders (seq2seq/beam_search.h, longrun/models/generate.h),
// the prompt and each step running the form's cached one-token step (CausalLm::build_step);
// every causal form has one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// The cached-step session of a model whose architecture is a CausalLm (internal_error otherwise).
Result<std::unique_ptr<Session>> causal_lm_step_session(std::shared_ptr<const Model> model,
                                                        const SessionOptions& options);

// `step` is causal_lm_step_session's session for `model`. The caches that grow with the
// sequence (LmStepSpec::Cache::grows) are kept in `cache_dtype` (f32 or bf16), the others in f32.
Result<GenerateResult> generate_causal_lm(const CausalLmSpec& spec, const Model& model, Session& step,
                                          const TensorView& input_ids, const GenerateOptions& options,
                                          DType cache_dtype);

// out[r] = in[rows[r]] along axis 0 of a rank-4 [R, H, S_in, hd] tensor, each [H, S_in, hd]
// block placed in [H, S_out, hd] (S_out >= S_in; the new slots are zero). Any dtype.
Result<Tensor> gather_rows(const Tensor& in, const std::vector<int64_t>& rows, int64_t slots_out);

// Element i of an integer (or 0/1 float) tensor as int64.
Result<int64_t> int_at(const TensorView& v, int64_t i);

}  // namespace longrun::models
