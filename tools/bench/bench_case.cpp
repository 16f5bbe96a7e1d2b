#include "bench_case.h"

#include <new>

namespace longrun::bench {

HostBuffer::HostBuffer(size_t bytes)
    : size_(bytes),
      data_(static_cast<std::byte*>(::operator new[](bytes ? bytes : 1, std::align_val_t{64}))) {}

HostBuffer::~HostBuffer() { ::operator delete[](data_, std::align_val_t{64}); }

BufferPtr random_f32(int64_t count, uint32_t seed, float lo, float hi) {
  auto buf = std::make_shared<HostBuffer>(size_t(count) * sizeof(float));
  float* p = buf->f32();
  // splitmix64: fast enough for GiB-sized inputs, and the values only need to be
  // repeatable and spread out (timing does not depend on their statistics).
  uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t(seed) + 1);
  const float span = hi - lo;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = lo + span * float(z >> 40) * (1.0f / 16777216.0f);  // 24 random bits in [0, 1)
  }
  return buf;
}

}  // namespace longrun::bench
