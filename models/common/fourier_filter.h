// The Fourier Transformer's token-mixing steps (docs/models.md#spectral-filter, docs/models.md#lra-encoder,
// docs/models.md#fourier-bart) as the families insert them into their layer stacks: the DCT low-pass filter
// along the sequence (the spectral_filter op keeps the first M = ceil(T * ratio) coefficients and returns M
// rows), with or without the CLS slot kept out, and Fourier-BART's global residual.
//
// Users: fourier/fourier_lra.cpp ("fourier-lra"), bert/bert.cpp ("fourier-bert",
// "fourier-roberta") and seq2seq/encoder_decoder.cpp ("fourier-bart", fourier_bart.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/architecture.h"

namespace longrun::models {

// x [B, T, D] with T = *length (CLS included) -> [CLS, filter(x[:, 1:])] [B, 1 + M', D]:
// M = ceil(T * ratio) counts the CLS slot, and the kept slice caps at the T - 1 filtered
// rows, so M' = min(M, T - 1); *length becomes 1 + M'. Nodes: name (the filter) and
// name + ".cls" (the concat).
ValueId filter_after_cls(GraphContext& c, ValueId x, int64_t* length, double ratio, const std::string& name);

// x [B, T, D] -> filter(x) [B, ceil(T * ratio), D] over every position (pads included).
ValueId filter_sequence(GraphContext& c, ValueId x, double ratio, const std::string& name);

// Fourier-BART's global residual before the last encoder LayerNorm: inputs[0] plus every
// later entry of `inputs` and `last`, each nearest-upsampled to `length` rows
// (inputs = the pre-filter inputs of the filter layers, last = the last layer's pre-LN sum).
ValueId global_residual(GraphContext& c, const std::vector<ValueId>& inputs, ValueId last, int64_t length,
                        const std::string& name);

}  // namespace longrun::models
