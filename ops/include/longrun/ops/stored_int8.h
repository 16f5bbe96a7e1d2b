// Linear-layer weights whose int8 quantization comes from the model file (a native file
// written by `longrun-convert --quantize int8`, docs/checkpoints.md#quantized-weights).
//
// The loader hands the graph the dequantized f32 weight w = q · scale (what every f32 or
// bf16 consumer reads) and registers the stored q and scales under that f32 buffer's address;
// a backend's int8 matmul looks the address up at prepare and uses the stored values as they
// are instead of quantizing w again. q and scale are exactly what ops::s8::quantize_weight
// returns for the unquantized source weight, so an int8 session gives the same bytes on
// either file.
#pragma once

#include <cstdint>
#include <memory>

#include "longrun/ops/reduced_precision.h"
#include "longrun/status.h"

namespace longrun::ops::s8 {

struct StoredWeight {
  LinearWeight layout = LinearWeight::none;  // nk: q[n, k]; kn: q[k, n] (as the weight is stored)
  int64_t n = 0, k = 0;                      // output channels, inputs
  const int8_t* q = nullptr;                 // n · k values in [-127, 127], in `layout`
  const float* scale = nullptr;              // [n], finite and >= 0
  std::shared_ptr<const void> owner;         // keeps q and scale alive
};

// Registers `w` as the stored quantization of the f32 weight at `f32_data` until the returned
// handle is destroyed (hold it as long as that buffer lives). Errors: an address already
// registered, no memory.
Result<std::shared_ptr<const void>> register_stored_weight(const void* f32_data, StoredWeight w);

// The stored quantization registered for `f32_data`, or nullptr.
std::shared_ptr<const StoredWeight> find_stored_weight(const void* f32_data);

// The stored weight as the format's QuantizedWeight (channel-major q[n, k]), checked against
// the layout and dimensions the graph uses it with. Errors: a different layout or shape
// (naming both), no memory.
Result<QuantizedWeight> stored_to_quantized(const StoredWeight& w, LinearWeight layout, int64_t n, int64_t k);

}  // namespace longrun::ops::s8
