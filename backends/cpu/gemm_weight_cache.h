// Prepacked GEMM weights shared by every prepared graph of the process.
//
// A model session plans one graph per input shape, and several sessions may share one model;
// if each prepared matmul node packed its own copy of its weight, a process would hold the
// model's bytes once per plan. The cache keys a packed weight by what the packed bytes
// depend on (the weight's address, its desc and the packed format: the f32 GEMM's ISA packing
// and op(B)'s strides, or the int8 / bf16 GEMM's layout and panel format) and hands out shared
// references: one packed copy per weight and format while any prepared graph uses it.
//
// An entry is any type: the f32 GEMM's PackedWeight (floats) below, the int8 GEMM's
// s8::PackedWeightS8 (gemm_s8.h, typed int16 and float buffers), the bf16 GEMM's
// bf16::PackedWeightBF16 (gemm_bf16.h, uint16 panels). Each entry remembers its
// type, and a lookup with another type is an error, so no buffer is ever read as a type it
// was not written as.
//
// Address reuse is safe: a packed entry lives only while a prepared graph holding it lives,
// and that graph keeps the weight's memory alive, so no other weight can occupy the address
// of a live entry (an expired entry is replaced).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <utility>
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

// The type-erased cache (shared_weight below is the typed interface): the live entry for
// `key` when there is one (an error when it holds another type than `type`), else reserve()
// (which may refuse, e.g. a memory budget), then make() outside the cache's lock (concurrent
// misses of one key may both make one; one result is kept). *created tells whether this call
// made the entry that is returned.
Result<std::shared_ptr<const void>> shared_entry(
    const std::string& key, std::type_index type, const std::function<Status()>& reserve,
    const std::function<Result<std::shared_ptr<const void>>()>& make, bool* created);

// The shared packed weight of type T for `key`, made by make() on a miss (see shared_entry).
template <class T>
Result<std::shared_ptr<const T>> shared_weight(const std::string& key, const std::function<Status()>& reserve,
                                               const std::function<Result<std::shared_ptr<const T>>()>& make,
                                               bool* created) {
  LR_ASSIGN_OR_RETURN(std::shared_ptr<const void> entry,
                      shared_entry(
                          key, std::type_index(typeid(T)), reserve,
                          [&]() -> Result<std::shared_ptr<const void>> {
                            LR_ASSIGN_OR_RETURN(std::shared_ptr<const T> made, make());
                            return std::shared_ptr<const void>(std::move(made));
                          },
                          created));
  return std::static_pointer_cast<const T>(std::move(entry));  // of type T: shared_entry checked
}

// The f32 GEMM's packed weight.
struct PackedWeight {
  AlignedFloats floats;
};

// Returns the f32 packed weight for `key`: on a miss, reserve(), then pack(dst) into a new
// buffer of `floats` floats (see shared_entry).
Result<std::shared_ptr<const PackedWeight>> packed_weight(const std::string& key, int64_t floats,
                                                          const std::function<Status()>& reserve,
                                                          const std::function<void(float* dst)>& pack,
                                                          bool* created);

// Live entries, of every type (tests).
size_t packed_weight_entries();

}  // namespace longrun::cpu::gemm
