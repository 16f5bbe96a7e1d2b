// Helpers of every fuzz target: the failure trap and the input as a byte buffer of its own
// (so ASan sees reads past its end).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fuzz_input {

// A broken property: stop here, so libFuzzer keeps the input as a crash.
[[noreturn]] inline void fail() { __builtin_trap(); }

inline std::vector<std::byte> bytes(const uint8_t* data, size_t size) {
  std::vector<std::byte> buffer(size);
  if (size) std::memcpy(buffer.data(), data, size);
  return buffer;
}

}  // namespace fuzz_input
