// libFuzzer target for the Flax msgpack reader (tools/convert/flax) and, on accepted
// inputs, flattening and the layout helpers.
//
// Build (clang): see tools/dev/fuzz.sh (fuzz_flax_msgpack). Seeds: tests/golden/flax/*.msgpack.
//
// Properties checked on every input: read_flax_msgpack returns (never crashes, never reads
// outside the buffer) with a non-empty message on failure; every accepted tensor's bytes lie
// inside the input or its own buffer, are aligned to the element size and number exactly
// numel * element size (all bytes are touched); flattening and the kernel transposes either
// succeed with consistent sizes or fail with a message.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "convert/flax/flax_layout.h"
#include "convert/flax/flax_tree.h"
#include "fuzz_input.h"

using fuzz_input::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace longrun;
  using namespace longrun::checkpoint;
  // An exact-size heap copy so ASan sees reads past the end of the input.
  const std::vector<std::byte> buffer = fuzz_input::bytes(data, size);
  FlaxLimits limits;
  limits.max_chunked_bytes = uint64_t{64} << 20;  // keep the fuzzer's allocations small
  const auto tree = read_flax_msgpack(buffer, limits, "fuzz");
  if (!tree.ok()) {
    if (tree.status().message().empty()) fail();
    return 0;
  }
  const auto leaves = flatten_flax_tree(*tree);
  if (!leaves.ok()) {
    if (leaves.status().message().empty()) fail();
    return 0;
  }
  unsigned sum = 0;
  for (const FlaxLeaf& l : *leaves) {
    if ((l.tensor == nullptr) == (l.scalar == nullptr)) fail();
    if (l.tensor == nullptr) continue;
    const FlaxTensor& t = *l.tensor;
    const size_t es = flax_dtype_size(t.dtype);
    if (t.numel() < 0 || t.bytes.size() != uint64_t(t.numel()) * es) fail();
    if (reinterpret_cast<uintptr_t>(t.bytes.data()) % es != 0) fail();
    if (t.zero_copy() && !t.bytes.empty() &&
        (t.bytes.data() < buffer.data() || t.bytes.data() + t.bytes.size() > buffer.data() + buffer.size()))
      fail();
    if (!t.zero_copy() && t.bytes.data() != t.owned->data()) fail();
    for (std::byte b : t.bytes) sum += unsigned(b);
    if (t.shape.size() >= 2) {
      const auto w = kernel_to_torch_weight(t, 1, l.path);
      if (w.ok() ? w->bytes.size() != t.bytes.size() : w.status().message().empty()) fail();
    }
    const auto f = to_f32(t, l.path);
    if (f.ok() && f->bytes.size() != uint64_t(t.numel()) * 4) fail();
  }
  volatile unsigned sink = sum;
  (void)sink;
  return 0;
}
