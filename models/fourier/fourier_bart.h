// arch "fourier-bart": Fourier-BART (docs/models.md#fourier-bart; LUMIA-Group/FourierTransformer
// Summarization, fairseq bart_large_dct). The "bart" config fields and parameter names, plus
// dct_layers (list of encoder layers, required), dct_percentage (r in (0, 1], required with
// filters), global_residual (true; false is rejected with filters: the official decoder
// asserts), dct_lowpass (true). fairseq semantics: make_positions (pad-aware, same table
// shape), padding from ids == pad (no attention_mask input), pad rows zeroed after the
// embeddings; at a filter layer the input (all positions, pads included) is filtered to
// M = ceil(T r) before the standard layer, the key mask is dropped from the first filter
// on and cross-attention masks nothing; the last layer adds every pre-filter input and its
// own pre-LN sum, nearest-upsampled to the input length, before its final LayerNorm. Debug
// adds debug.encoder.layer<i>.filtered. The official fp16 rounding of the filter output
// (docs/models.md#fourier-bart) is not reproduced.
// The encoder-decoder itself (filter layers, global residual, unmasked cross-attention) is
// seq2seq/encoder_decoder.h with Seq2SeqSpec::filter_layers set; the steps are common/fourier_filter.h.
#pragma once

#include <memory>
#include <string_view>

#include "common/architecture.h"

namespace longrun::models {

Result<std::unique_ptr<Architecture>> parse_fourier_bart_config(std::string_view config_json);

}  // namespace longrun::models
