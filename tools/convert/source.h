// What every reader produces: the tensors of a source checkpoint (names as stored, flattened
// with '.' through nested dicts), each a validated view into a storage that stays mapped,
// plus what the mapping and --inspect need to know about the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "longrun/status.h"
#include "pickle.h"
#include "source_dtype.h"

namespace longrun::convert {

struct SourceTensor {
  std::string name;
  SourceDType dtype = SourceDType::f32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements
  int64_t offset = 0;            // in elements from the start of `storage`
  std::span<const std::byte> storage;
  std::string storage_id;  // tensors sharing a storage (tied weights) share this

  int64_t numel() const;
  bool contiguous() const;  // row-major (size-1 dims ignored)
};

// The tensor's elements in row-major order (gathered when it is a strided view). The view
// was validated by the reader, so this cannot read outside the storage.
std::vector<std::byte> materialize(const SourceTensor& t);

struct SourceCheckpoint {
  std::string format;  // "pytorch-zip", "pytorch-legacy", "safetensors", "safetensors-sharded", ...
  std::vector<std::string> files;  // the files read (hashed into the output's metadata)
  std::vector<SourceTensor> tensors;
  std::map<std::string, std::string> metadata;      // safetensors __metadata__
  std::string config_json;                          // an HF config.json next to the weights, if any
  std::vector<std::string> notes;                   // non-tensor entries, opaque globals (for --inspect)
  std::vector<std::shared_ptr<const void>> owners;  // mappings / parse trees the views point into
  const PNode* pickle_root = nullptr;               // torch files: the unpickled object (in owners)
};

struct ReadOptions {
  bool lenient = false;  // tolerate unknown pickle globals as opaque nodes (fairseq `args`, meters)
  // Strict, except outside the top-level "model" entry of a torch file's object: there unknown
  // globals (fairseq args/cfg/extra_state: enums, dataclass configs, meters) stay opaque, while
  // one under "model" is still refused by name. read_fairseq sets it.
  bool opaque_outside_model = false;
  PickleLimits limits;
};

// An overlapping (e.g. stride-0, expanded) view may materialise to more bytes than its storage
// holds only up to this many bytes.
inline constexpr uint64_t kMaxExpandedViewBytes = uint64_t(64) << 20;

// Validates a tensor view against its storage (rank, non-negative sizes/strides, checked
// extent inside the storage, materialised size at most max(storage bytes,
// kMaxExpandedViewBytes)). `what` names the tensor.
Status check_view(const SourceTensor& t, const std::string& what);

// Collects every tensor reachable from `root` through dicts (keys joined with '.'), lists,
// tuples and Namespace records; other values become notes. Depth- and cycle-bounded.
// `storage_bytes(key)` returns the storage's bytes (or an error if the file lacks them).
Status collect_tensors(
    const PNode* root, const std::string& label,
    const std::function<Result<std::span<const std::byte>>(const StorageRef&)>& storage_bytes,
    SourceCheckpoint* out);

// Maps a whole file read-only; the returned owner keeps it mapped.
Result<std::pair<std::span<const std::byte>, std::shared_ptr<const void>>> map_file(const std::string& path);

}  // namespace longrun::convert
