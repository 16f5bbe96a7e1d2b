// Flax's chunked-array form: arrays over MAX_CHUNK_SIZE (2^30) bytes are written as
//   {"__msgpack_chunked_array__": true, "shape": {"0": d0, ...}, "chunks": {"0": 1-D ndarray, ...}}
// (flax.serialization._chunk); the reader concatenates the chunks and reshapes.
#pragma once

#include <string_view>

#include "flax_tree.h"

namespace longrun::checkpoint {

inline constexpr std::string_view kChunkedMarker = "__msgpack_chunked_array__";

// Validates a parsed chunked-array map (exactly the three keys; shape entries "0".."r-1" are
// non-negative integers; chunks "0".."m-1" are 1-D arrays of one dtype whose element counts
// sum to the shape's) and returns the reassembled tensor (always owned). Messages name the
// offending field; the caller adds file, offset and key path.
Result<FlaxTensor> join_chunked_array(const FlaxDict& d, const FlaxLimits& limits);

}  // namespace longrun::checkpoint
