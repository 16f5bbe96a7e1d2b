// A reader for the zip archives torch.save writes (docs/checkpoints.md#zip-reader): central directory
// (zip64 when present), stored (uncompressed) entries only, sizes and offsets from the central
// directory (torch's local headers carry zeros + data descriptors), data offset from the local
// header's name/extra lengths. Every offset and size is bounds-checked; entries must not
// overlap, names must be unique, relative, free of "..", and all under one top-level folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "longrun/status.h"

namespace longrun::convert {

struct ZipEntry {
  std::string name;
  uint64_t data_offset = 0;  // from the start of the archive
  uint64_t size = 0;
  uint32_t crc32 = 0;  // 0 = not recorded (torch can skip it)
};

class ZipArchive {
 public:
  static constexpr uint64_t kMaxEntries = 1'000'000;

  // `file` must outlive the archive. `label` names the file in errors.
  static Result<ZipArchive> parse(std::span<const std::byte> file, const std::string& label);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  // The top-level folder every entry lives in ("archive", "pytorch_model", ...), without '/'.
  const std::string& prefix() const { return prefix_; }
  // The entry's bytes; checks the CRC-32 when one is recorded.
  Result<std::span<const std::byte>> data(const ZipEntry& e) const;

 private:
  std::span<const std::byte> file_;
  std::string label_;
  std::string prefix_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

uint32_t crc32(std::span<const std::byte> data);

}  // namespace longrun::convert
