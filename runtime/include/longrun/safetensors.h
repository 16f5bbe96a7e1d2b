// safetensors reading (mmap, zero-copy, validated as in docs/checkpoints.md#safetensors-reader)
// and writing (64-byte aligned tensors, padded header, __metadata__, atomic temp+rename).
//
// Every file is untrusted: the reader checks header size, UTF-8, strict JSON (no duplicate
// keys, plain non-negative integers <= 2^48-1, no unknown fields), known dtypes,
// prod(shape) * size with overflow checks, offsets contiguous from 0 with no gaps or
// overlaps, and that the last offset ends the file. Errors name the file and the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun {

struct SafetensorsEntry {
  std::string name;
  TensorDesc desc;          // contiguous
  uint64_t data_begin = 0;  // byte offsets relative to the data section
  uint64_t data_end = 0;
  std::span<const std::byte> bytes;  // points into the mapped file
};

class SafetensorsFile {
 public:
  // Maps and validates a file.
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Validates an in-memory buffer (kept alive by `owner`); `label` names it in errors.
  static Result<std::shared_ptr<SafetensorsFile>> parse(std::span<const std::byte> buffer,
                                                        std::shared_ptr<const void> owner, std::string label);

  const std::string& path() const { return label_; }
  // Tensors in file order (by offset). Filler tensors named "__pad*" are not listed.
  const std::vector<SafetensorsEntry>& tensors() const { return tensors_; }
  const SafetensorsEntry* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Keeps the mapping alive (hand to GraphBuilder::weight as owner).
  std::shared_ptr<const void> owner() const { return owner_; }
  uint64_t file_size() const { return buffer_.size(); }

 private:
  std::string label_;
  std::span<const std::byte> buffer_;
  std::shared_ptr<const void> owner_;
  std::vector<SafetensorsEntry> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct SafetensorsWriteEntry {
  std::string name;
  TensorDesc desc;                   // must be contiguous
  std::span<const std::byte> bytes;  // exactly desc.nbytes()
};

// Writes `path` atomically (temp file in the same directory, fsync, rename). Tensors are
// written in the given order, each 64-byte aligned from the start of the file (U8 filler
// tensors "__pad.N" fill gaps so the buffer has no holes). Metadata values are strings.
Status write_safetensors(const std::string& path, std::span<const SafetensorsWriteEntry> tensors,
                         const std::map<std::string, std::string>& metadata);

// Same layout into memory (used by tests and fuzz seeds).
Result<std::vector<std::byte>> serialize_safetensors(std::span<const SafetensorsWriteEntry> tensors,
                                                     const std::map<std::string, std::string>& metadata);

}  // namespace longrun
