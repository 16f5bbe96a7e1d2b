// Checkpoint inputs other than single torch files: a sharded safetensors checkpoint
// (model.safetensors.index.json) and a Hugging Face directory (config.json + weights), built
// at test time from the lra_vanilla golden; index inconsistencies are refused by name.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "convert.h"
#include "convert_test_util.h"
#include "longrun/safetensors.h"
#include "readers.h"
#include "support/temp_dir.h"

using namespace longrun;
using namespace longrun::convert;
namespace fs = std::filesystem;

namespace {

using test_support::TempDir;

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream out(p);
  out << s;
}

// Splits the golden into two shards + an index; returns the index's weight_map entries.
std::string write_shards(const fs::path& dir, const SafetensorsFile& golden) {
  std::vector<SafetensorsWriteEntry> a, b;
  std::string map;
  for (size_t i = 0; i < golden.tensors().size(); ++i) {
    const SafetensorsEntry& e = golden.tensors()[i];
    const bool first = i % 2 == 0;
    (first ? a : b).push_back({e.name, e.desc, e.bytes});
    map += std::string(map.empty() ? "" : ",") + "\"" + e.name + "\":\"model-0000" + (first ? "1" : "2") +
           "-of-00002.safetensors\"";
  }
  REQUIRE(write_safetensors((dir / "model-00001-of-00002.safetensors").string(), a, {}).ok());
  REQUIRE(write_safetensors((dir / "model-00002-of-00002.safetensors").string(), b, {}).ok());
  return map;
}

}  // namespace

TEST_CASE("convert inputs: sharded safetensors and an HF directory read every tensor once") {
  auto golden = SafetensorsFile::open(std::string(LONGRUN_GOLDEN_DIR) + "/models/lra_vanilla.safetensors");
  REQUIRE(golden.ok());
  TempDir dir("convert-in");
  const std::string map = write_shards(dir.path, **golden);
  write_text(dir.path / "model.safetensors.index.json",
             "{\"metadata\":{\"total_size\":1},\"weight_map\":{" + map + "}}");
  write_text(dir.path / "config.json", "{\"vocab_size\": 32}");

  auto sharded = read_checkpoint((dir.path / "model.safetensors.index.json").string(), "auto", {});
  REQUIRE_MESSAGE(sharded.ok(), sharded.status().to_string());
  CHECK(sharded->format == "safetensors-sharded");
  CHECK(sharded->files.size() == 2);
  CHECK(sharded->tensors.size() == (*golden)->tensors().size());

  auto hf = read_checkpoint(dir.path.string(), "hf", {});
  REQUIRE_MESSAGE(hf.ok(), hf.status().to_string());
  CHECK(hf->format == "hf-dir/safetensors-sharded");
  CHECK(hf->config_json == "{\"vocab_size\": 32}");
  for (const SourceTensor& t : hf->tensors) {
    const SafetensorsEntry* g = (*golden)->find(t.name);
    REQUIRE(g);
    const auto m = materialize(t);
    CHECK(std::equal(m.begin(), m.end(), g->bytes.begin(), g->bytes.end()));
  }

  // The golden model file itself is a valid input (native -> native, e.g. to change dtype).
  ConvertOptions o;
  o.arch = "fourier-lra";
  o.config_json = (*golden)->metadata().at("longrun.config");
  o.dtype = DType::bf16;
  auto r = convert_checkpoint(*hf, o, (dir.path / "out.safetensors").string());
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  CHECK(r->dtype_conversions == 40);
}

TEST_CASE("convert inputs: inconsistent shard indexes are refused") {
  auto golden = SafetensorsFile::open(std::string(LONGRUN_GOLDEN_DIR) + "/models/lra_vanilla.safetensors");
  REQUIRE(golden.ok());
  TempDir dir("convert-in");
  std::string map = write_shards(dir.path, **golden);
  const fs::path index = dir.path / "model.safetensors.index.json";
  auto refused = [&](const std::string& json, const std::string& what) {
    write_text(index, json);
    auto r = read_checkpoint(index.string(), "auto", {});
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.status().message().find(what) != std::string::npos, r.status().message());
  };
  const std::string first = (*golden)->tensors()[0].name;
  const std::string swapped = map.substr(0, map.find("00001")) + "00002" + map.substr(map.find("00001") + 5);
  refused("{\"weight_map\":{" + swapped + "}}",
          "holds tensor '" + first + "', which the weight_map assigns to");
  refused("{\"weight_map\":{" + map + ",\"ghost\":\"model-00001-of-00002.safetensors\"}}",
          "tensor 'ghost' is not in its shard");
  refused("{\"weight_map\":{\"x\":\"../evil.safetensors\"}}", "is not a file in the same folder");
  refused("{\"weight_map\":{\"x\":\"missing.safetensors\"}}", "missing.safetensors");
  refused("[1,2]", "not a JSON object with a \"weight_map\"");
  auto none = read_checkpoint((dir.path / "nope.pt").string(), "auto", {});
  CHECK(none.status().code() == StatusCode::not_found);
}

TEST_CASE("convert inputs: parse_shard_index reads the index JSON from bytes") {
  auto ok =
      parse_shard_index(R"({"metadata":{"total_size":8},"weight_map":{"a":"s1","b":"s2","c":"s1"}})", "i");
  REQUIRE_MESSAGE(ok.ok(), ok.status().to_string());
  CHECK(ok->shards == std::set<std::string>{"s1", "s2"});
  CHECK(ok->where.at("c") == "s1");
  auto refused = [](const std::string& json, const std::string& what) {
    auto r = parse_shard_index(json, "idx.json");
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.status().message().find("idx.json: " + what) != std::string::npos, r.status().message());
  };
  refused(R"({"weight_map":{"x":1}})", "weight_map['x'] is not a string");
  refused(R"({"weight_map":{"x":"a/b"}})", "shard name 'a/b' is not a file in the same folder");
  refused(R"({"weight_map":{"x":""}})", "shard name '' is not a file");
  refused(R"({"weight_map":[]})", "not a JSON object with a \"weight_map\" object");
  refused("{\"weight_map\":{", "not a JSON object");
}
