// Limits and reserved names shared by the safetensors reader and writer (docs/checkpoints.md#safetensors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace longrun::safetensors_format {

// Same cap as the reference reader (MAX_HEADER_SIZE): a lying length prefix cannot make us
// scan gigabytes of "JSON".
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// docs/safetensors.schema.json: dims and offsets are integers in [0, 2^48 - 1].
inline constexpr uint64_t kMaxInteger = (uint64_t{1} << 48) - 1;
// Our limit on tensor name length (bytes of UTF-8).
inline constexpr size_t kMaxNameBytes = 1024;
inline constexpr std::string_view kMetadataKey = "__metadata__";
// U8 filler tensors our writer inserts so every tensor is aligned without leaving holes in
// the data section (our convention, not an upstream one). Readers validate but hide them.
inline constexpr std::string_view kPadPrefix = "__pad";
// Alignment of the data section and of every tensor, from the start of the file.
inline constexpr uint64_t kAlignment = 64;

inline bool is_pad_name(std::string_view name) { return name.substr(0, kPadPrefix.size()) == kPadPrefix; }

}  // namespace longrun::safetensors_format
