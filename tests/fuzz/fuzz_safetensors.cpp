// libFuzzer target for the safetensors reader (and, on accepted inputs, the writer).
//
// Build (clang): clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined
//   -Iruntime/include -Iops/include -Iruntime/src tests/fuzz/fuzz_safetensors.cpp
//   runtime/src/safetensors_reader.cpp runtime/src/file_pages.cpp runtime/src/safetensors_writer.cpp
//   runtime/src/strict_json.cpp runtime/src/core/*.cpp -o fuzz_safetensors
// Seeds: any .safetensors file, e.g. the ones serialize_safetensors() writes in the tests.
//
// Properties checked on every input: parse() returns (never crashes, never reads outside the
// buffer: every accepted tensor's bytes are touched); an accepted file re-serializes and
// re-parses to the same names, descs, bytes and metadata.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_input.h"
#include "longrun/safetensors.h"

using fuzz_input::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace longrun;
  // An exact-size heap copy so ASan sees reads past the end of the input.
  const std::vector<std::byte> buffer = fuzz_input::bytes(data, size);
  const auto parsed = SafetensorsFile::parse(buffer, nullptr, "fuzz");
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) fail();
    return 0;
  }
  const SafetensorsFile& f = **parsed;

  unsigned sum = 0;
  std::vector<SafetensorsWriteEntry> entries;
  for (const SafetensorsEntry& e : f.tensors()) {
    if (e.bytes.size() != uint64_t(e.desc.nbytes()) || e.data_end - e.data_begin != e.bytes.size()) fail();
    if (e.bytes.data() < buffer.data() || e.bytes.data() + e.bytes.size() > buffer.data() + buffer.size())
      fail();
    for (std::byte b : e.bytes) sum += unsigned(b);
    entries.push_back({e.name, e.desc, e.bytes});
  }
  volatile unsigned sink = sum;
  (void)sink;

  // Round trip: our writer must accept whatever the reader accepted (the reader's checks are
  // at least as strict as the writer's), unless the file declares a non-"pt" format.
  if (const auto it = f.metadata().find("format"); it != f.metadata().end() && it->second != "pt") return 0;
  const auto bytes = serialize_safetensors(entries, f.metadata());
  if (!bytes.ok()) fail();
  const auto again = SafetensorsFile::parse(*bytes, nullptr, "fuzz-roundtrip");
  if (!again.ok()) fail();
  const SafetensorsFile& g = **again;
  if (g.tensors().size() != f.tensors().size()) fail();
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const SafetensorsEntry& a = f.tensors()[i];
    const SafetensorsEntry& b = g.tensors()[i];
    if (a.name != b.name || !(a.desc == b.desc) || a.bytes.size() != b.bytes.size()) fail();
    if (!a.bytes.empty() && std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) != 0) fail();
    if (b.data_begin % 64 != 0) fail();
  }
  auto expected = f.metadata();
  expected["format"] = "pt";
  if (g.metadata() != expected) fail();
  return 0;
}
