// libFuzzer target for the checkpoint readers on in-memory files (tools/convert): torch.save
// zip archives (zip reader + pickle parser + storage checks), legacy torch.save streams and
// safetensors, whichever the bytes look like.
//
// Built and run by tools/dev/fuzz.sh (seeds: tests/golden/checkpoints/*.pt and
// tests/fuzz/seeds/torch_zip/). Properties: no crash, no sanitizer report, every error carries a
// message, every accepted tensor materialises to numel * itemsize bytes (touching each element
// of its view, so ASan catches any read outside the file).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_input.h"
#include "readers.h"

using fuzz_input::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace longrun;
  using namespace longrun::convert;
  const std::vector<std::byte> buffer = fuzz_input::bytes(data, size);
  ReadOptions o;
  o.limits.max_ops = 200'000;
  SourceCheckpoint ck;
  const Status st = read_checkpoint_bytes(buffer, "fuzz", o, &ck);
  if (!st.ok()) {
    if (st.message().empty()) fail();
    return 0;
  }
  unsigned sum = 0;
  for (const SourceTensor& t : ck.tensors) {
    const auto m = materialize(t);
    if (m.size() != size_t(t.numel()) * size_t(source_dtype_size(t.dtype))) fail();
    for (std::byte b : m) sum += unsigned(b);
  }
  volatile unsigned sink = sum;
  (void)sink;
  return 0;
}
