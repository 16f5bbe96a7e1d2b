// Flax msgpack checkpoints (flax.serialization.to_bytes: a `checkpoint_<step>` file, an
// HF flax_model.msgpack) as a SourceCheckpoint: the tree is parsed by tools/convert/flax
// (bounds-checked, chunked arrays reassembled) and every array leaf becomes a tensor named by
// its "/"-joined path ("params/Embed_0/embedding"). Plain scalars (step counters, learning
// rates) become notes. Kernels keep the Flax layout: the mapping decides about transposes.
#pragma once

#include <span>
#include <string>

#include "source.h"

namespace longrun::convert {

// True when `bytes` starts like a msgpack map and not like a safetensors header (whose
// first 8 bytes are a length and whose 9th is '{' or JSON whitespace).
bool looks_like_flax_msgpack(std::span<const std::byte> bytes);

// Parses `bytes` (kept alive by the caller through out->owners) into out->tensors.
// Array dtypes without a source dtype (uint16/32/64) are errors naming the leaf.
Status read_flax_checkpoint(std::span<const std::byte> bytes, const std::string& label,
                            SourceCheckpoint* out);

}  // namespace longrun::convert
