// Prepacked GEMM weights shared by every prepared graph of the process.
//
// A model session plans one graph per input shape, and several sessions may share one model;
// if each prepared matmul node packed its own copy of its weight, a process would hold the
// model's bytes once per plan. The cache keys a packed weight by what the packed bytes
// depend on (the weight's address, its desc, the ISA's packing and op(B)'s strides) and hands
// out shared references: one packed copy per weight and ISA while any prepared graph uses it.
//
// Address reuse is safe: a packed entry lives only while a prepared graph holding it lives,
// and that graph keeps the weight's memory alive, so no other weight can occupy the address
// of a live entry (an expired entry is replaced).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "longrun/status.h"

namespace longrun::cpu::gemm {

// A float buffer aligned to a cache line.
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(int64_t n) : storage_(size_t(n + 16)) {}
  float* data() {
    auto p = reinterpret_cast<uintptr_t>(storage_.data());
    return reinterpret_cast<float*>((p + 63) & ~uintptr_t(63));
  }
  const float* data() const { return const_cast<AlignedFloats*>(this)->data(); }
  int64_t size() const { return std::max<int64_t>(int64_t(storage_.size()) - 16, 0); }

 private:
  std::vector<float> storage_;
};

struct PackedWeight {
  AlignedFloats floats;
};

// Returns the packed weight for `key`. When no live entry exists: reserve() (which may refuse,
// e.g. a memory budget), then pack(dst) into a new buffer of `floats` floats, outside the
// cache's lock (concurrent misses of one key may both pack; one result is kept). *created
// tells whether this call packed.
Result<std::shared_ptr<const PackedWeight>> packed_weight(const std::string& key, int64_t floats,
                                                          const std::function<Status()>& reserve,
                                                          const std::function<void(float* dst)>& pack,
                                                          bool* created);

// Live entries (tests).
size_t packed_weight_entries();

}  // namespace longrun::cpu::gemm
