// libFuzzer target for the sharded-checkpoint index of tools/convert/readers.cpp
// (model.safetensors.index.json / pytorch_model.bin.index.json): parse_shard_index on the bytes,
// then the whole Hugging Face directory read (read_hf_dir -> read_sharded) with the input as
// the index next to two small fixed shards, "a.safetensors" (tensors x, y) and
// "b.safetensors" (z), and the input also as config.json.
//
// Built and run by tools/dev/fuzz.sh (seeds: written there, a valid index over a and b and
// variants). Properties: no crash, no sanitizer report, every error carries a message; an
// accepted index names only plain file names; an accepted directory read returns each mapped
// tensor exactly once, from the shard the index names, and keeps config.json byte for byte.

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_files.h"
#include "fuzz_input.h"
#include "readers.h"

namespace {

using fuzz_files::write_file;

using fuzz_input::fail;

// A safetensors file of `header` (padded to 8 bytes) and `data_bytes` bytes of data.
std::string safetensors(std::string header, size_t data_bytes) {
  while (header.size() % 8) header += ' ';
  std::string out;
  for (int i = 0; i < 8; ++i) out += char(uint8_t(uint64_t(header.size()) >> (8 * i)));
  return out + header + std::string(data_bytes, '\x01');
}

const std::string& work_dir() {
  static const std::string dir = [] {
    const std::string d = fuzz_files::make_temp_dir("fuzz_hf_index");
    write_file(d + "/a.safetensors", safetensors(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                 R"("y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                                 12));
    write_file(d + "/b.safetensors",
               safetensors(R"({"z":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}})", 8));
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace longrun;
  using namespace longrun::convert;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto index = parse_shard_index(text, "fuzz");
  if (!index.ok()) {
    if (index.status().message().empty()) fail();
  } else {
    for (const std::string& s : index->shards)
      if (s.empty() || s.find('/') != std::string::npos || s.find("..") != std::string::npos) fail();
    for (const auto& [name, s] : index->where)
      if (!index->shards.count(s)) fail();
  }

  const std::string& dir = work_dir();
  write_file(dir + "/model.safetensors.index.json", text);
  write_file(dir + "/config.json", text);
  auto ck = read_checkpoint(dir, "hf", ReadOptions{});
  if (!ck.ok()) {
    if (ck.status().message().empty()) fail();
    return 0;
  }
  if (!index.ok() || ck->config_json != text || ck->tensors.size() != index->where.size()) fail();
  std::set<std::string> names;
  for (const SourceTensor& t : ck->tensors)
    if (!names.insert(t.name).second || !index->where.count(t.name)) fail();
  return 0;
}
