// SHA-256 (FIPS 180-4), our own implementation: the converter records the digest of every
// source file in the output's metadata so a native file names exactly what it came from.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "longrun/status.h"

namespace longrun::convert {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> data);
  // Finishes the digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> finish();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lower-case hex of a digest.
std::string to_hex(std::span<const uint8_t> digest);
std::string sha256_hex(std::span<const std::byte> data);
// Streams a file through SHA-256; io_error names the file.
Result<std::string> sha256_file(const std::string& path);

}  // namespace longrun::convert
