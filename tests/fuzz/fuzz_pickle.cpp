// libFuzzer target for the safe pickle parser (tools/convert/pickle.{h,cpp}).
//
// Built and run by tools/dev/fuzz.sh (seeds: tests/fuzz/seeds/pickle/). Each input is parsed
// strictly and leniently; on success the tree is walked for tensors against a fake 4 KiB
// storage (views are validated, then materialised). Properties: no crash, no sanitizer report,
// every error carries a message, a parse never consumes more than the input.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_input.h"
#include "pickle.h"
#include "source.h"

using fuzz_input::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace longrun;
  using namespace longrun::convert;
  const std::vector<std::byte> buffer = fuzz_input::bytes(data, size);
  static const std::vector<std::byte> storage(4096, std::byte{0x3c});
  for (bool lenient : {false, true}) {
    PickleOptions o;
    o.lenient = lenient;
    o.limits.max_ops = 200'000;  // keep single inputs fast
    auto doc = parse_pickle(buffer, o, "fuzz");
    if (!doc.ok()) {
      if (doc.status().message().empty()) fail();
      continue;
    }
    if ((*doc)->consumed() > size) fail();
    SourceCheckpoint ck;
    auto bytes = [&](const StorageRef& s) -> Result<std::span<const std::byte>> {
      if (s.numel < 0) fail();
      return std::span<const std::byte>(storage);
    };
    const Status st = collect_tensors((*doc)->root(), "fuzz", bytes, &ck);
    if (!st.ok() && st.message().empty()) fail();
    for (const SourceTensor& t : ck.tensors) {
      const auto m = materialize(t);
      if (m.size() != size_t(t.numel()) * size_t(source_dtype_size(t.dtype))) fail();
    }
    (void)describe((*doc)->root());
  }
  return 0;
}
