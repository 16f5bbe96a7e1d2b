// Opens any supported checkpoint: a torch.save file (zip or legacy), a safetensors file, a
// sharded checkpoint (*.index.json naming safetensors or torch shards), or a Hugging Face
// directory (config.json + model.safetensors / sharded / pytorch_model.bin).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "source.h"

namespace longrun::convert {

// "auto" sniffs; "pytorch", "safetensors", "hf" insist on that kind of input.
Result<SourceCheckpoint> read_checkpoint(const std::string& path, const std::string& from,
                                         const ReadOptions& options);

// Reads one file, format by content (zip / legacy torch / safetensors).
Status read_checkpoint_file(const std::string& path, const ReadOptions& options, SourceCheckpoint* out);

// Same from memory (tests, fuzzing): the tensors point into `bytes`.
Status read_checkpoint_bytes(std::span<const std::byte> bytes, const std::string& label,
                             const ReadOptions& options, SourceCheckpoint* out);

// The JSON of a sharded checkpoint's index, {"metadata": {...}, "weight_map": {"tensor":
// "shard file"}}: shard names must be plain file names in the index's folder (no '/', no "..").
// `label` names the index in errors.
struct ShardIndex {
  std::map<std::string, std::string> where;  // tensor -> shard
  std::set<std::string> shards;
};
Result<ShardIndex> parse_shard_index(std::string_view text, const std::string& label);

// A JSON file read whole (config.json, --config, *.index.json): the size limit is checked
// before anything is read or allocated (a huge or endless file is refused naming the path,
// the limit and the size).
inline constexpr size_t kMaxConfigBytes = 10'000'000;
inline constexpr size_t kMaxIndexBytes = 100'000'000;
Result<std::string> read_json_file(const std::string& path, size_t max_bytes = kMaxConfigBytes);

}  // namespace longrun::convert
