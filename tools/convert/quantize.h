// --quantize int8: a native model file's linear-layer weights stored as int8 per output
// channel with f32 scales (docs/checkpoints.md#quantized-weights).
#pragma once

#include <cstdint>
#include <string>

#include "longrun/status.h"

namespace longrun::convert {

struct QuantizeSummary {
  int weights = 0;            // linear-layer weights quantized
  uint64_t bytes_before = 0;  // file sizes
  uint64_t bytes_after = 0;
};

// Reads the native file `in_path`, builds its model's graph, quantizes every weight that
// linear_layer_weights() lists (longrun/models/linear_weights.h) with ops::s8::quantize_weight,
// writes `out_path` atomically (it may be `in_path`) and loads it back to check it.
// *usage_error is set when the model has no linear layer to quantize.
Result<QuantizeSummary> quantize_native_file(const std::string& in_path, const std::string& out_path,
                                             bool* usage_error = nullptr);

}  // namespace longrun::convert
