// Which weights of a model graph are linear-layer weights, by the rule the int8 precision
// uses (ops::linear_weight_layout): what `longrun-convert --quantize int8` quantizes and
// what the loader checks a quantized file's layouts against (docs/checkpoints.md#quantized-weights).
#pragma once

#include <map>
#include <string>

#include "longrun/graph.h"
#include "longrun/ops/reduced_precision.h"

namespace longrun {

// The weights (by value name) every use of which is input 1 of a matmul that
// ops::linear_weight_layout calls a linear layer, all with the same layout, mapped to that
// layout. A weight with any other use (an embedding table tied to an output projection, a
// batched matmul, a bias) is not listed.
std::map<std::string, ops::LinearWeight> linear_layer_weights(const Graph& graph);

}  // namespace longrun
