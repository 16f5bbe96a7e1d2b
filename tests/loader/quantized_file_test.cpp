// Quantized native files (docs/checkpoints.md#quantized-weights): `--quantize int8` writes
// I8 q + F32 "<name>.scale" per linear-layer weight and lists them in longrun.quantization;
// the loader refuses every inconsistency with the file, tensor, field, expected and found.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "longrun/models/model.h"
#include "longrun/safetensors.h"
#include "quantize.h"

namespace longrun {
namespace {

const std::string kBert = std::string(LONGRUN_GOLDEN_DIR) + "/models/bert_tiny.safetensors";

struct Edited {
  struct Entry {
    std::string name;
    TensorDesc desc;
    std::vector<std::byte> bytes;
  };
  std::vector<Entry> tensors;
  std::map<std::string, std::string> metadata;

  static Edited read(const std::string& path) {
    auto f = SafetensorsFile::open(path);
    REQUIRE_MESSAGE(f.ok(), f.status().to_string());
    Edited e;
    for (const SafetensorsEntry& t : (*f)->tensors())
      e.tensors.push_back({t.name, t.desc, std::vector<std::byte>(t.bytes.begin(), t.bytes.end())});
    e.metadata = (*f)->metadata();
    e.metadata.erase("format");
    return e;
  }
  Entry& at(const std::string& name) {
    for (Entry& t : tensors)
      if (t.name == name) return t;
    FAIL("no tensor " << name);
    return tensors[0];
  }
  void remove(const std::string& name) {
    std::erase_if(tensors, [&](const Entry& t) { return t.name == name; });
  }
  nlohmann::json quantization() const { return nlohmann::json::parse(metadata.at("longrun.quantization")); }
  void set_quantization(const nlohmann::json& j) { metadata["longrun.quantization"] = j.dump(); }
  // Model::from_file of the serialised tensors, then a graph for input_ids [1, 4].
  Status load() const {
    std::vector<SafetensorsWriteEntry> entries;
    for (const Entry& t : tensors) entries.push_back({t.name, t.desc, t.bytes});
    auto bytes = serialize_safetensors(entries, metadata);
    REQUIRE_MESSAGE(bytes.ok(), bytes.status().to_string());
    auto buffer = std::make_shared<std::vector<std::byte>>(std::move(*bytes));
    auto file = SafetensorsFile::parse(*buffer, buffer, "edited.safetensors");
    if (!file.ok()) return file.status();
    auto model = Model::from_file(*file);
    if (!model.ok()) return model.status();
    const std::string names[] = {"input_ids"};
    const TensorDesc descs[] = {TensorDesc(DType::i64, {1, 4})};
    return (*model)->build_graph(names, descs).status();
  }
};

void check_error(const Status& s, std::initializer_list<const char*> parts) {
  REQUIRE_FALSE(s.ok());
  for (const char* p : parts)
    CHECK_MESSAGE(s.message().find(p) != std::string::npos, s.message(), " lacks ", p);
}

struct Quantized {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("longrun_qfile_" + std::to_string(::getpid()) + ".safetensors"))
                         .string();
  Quantized() {
    auto s = convert::quantize_native_file(kBert, path);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  }
  ~Quantized() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

// A square nk weight of bert_tiny (D = 64) and a non-square one (the FFN's [4D, D]).
const std::string kSquare = "encoder.layer.0.attention.self.query.weight";

TEST_CASE("quantized file: what --quantize int8 writes loads; the listing matches the tensors") {
  Quantized q;
  Edited f = Edited::read(q.path);
  CHECK(f.load().ok());
  const nlohmann::json j = f.quantization();
  CHECK(j["scheme"] == "int8-per-channel");
  REQUIRE(j["weights"].contains(kSquare));
  CHECK(j["weights"][kSquare] == "nk");
  for (const auto& [name, layout] : j["weights"].items()) {
    CAPTURE(name);
    CHECK(f.at(name).desc.dtype() == DType::i8);
    CHECK(f.at(name + ".scale").desc.dtype() == DType::f32);
  }
  // A tied or non-linear use is never quantized: the word embeddings stay float.
  CHECK_FALSE(j["weights"].contains("embeddings.word_embeddings.weight"));
  // The graph's weight values are the stored q (i8, in the file) and their scales: no f32 copy.
  auto model = Model::load(q.path);
  REQUIRE_MESSAGE(model.ok(), model.status().to_string());
  const std::string names[] = {"input_ids"};
  const TensorDesc descs[] = {TensorDesc(DType::i64, {1, 4})};
  auto g = (*model)->build_graph(names, descs);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  int stored = 0;
  for (const Value& v : g->values()) {
    if (v.role != ValueRole::weight) continue;
    const bool quantized = v.desc.dtype() == DType::i8;
    CHECK_MESSAGE(quantized == j["weights"].contains(v.name), v.name);
    CHECK_MESSAGE(quantized == (v.scales.data != nullptr), v.name);
    if (!quantized) continue;
    ++stored;
    // The stored values are the file's bytes; the scales are per output channel (nk: stride K).
    const auto& qb = f.at(v.name).bytes;
    const auto& sb = f.at(v.name + ".scale").bytes;
    CHECK(std::memcmp(v.weight_data, qb.data(), qb.size()) == 0);
    REQUIRE(v.scales.channels * 4 == int64_t(sb.size()));
    CHECK(std::memcmp(v.scales.data, sb.data(), sb.size()) == 0);
    CHECK(v.scales.stride == (j["weights"][v.name] == "nk" ? v.desc.dim(1) : 1));
  }
  CHECK(stored == int(j["weights"].size()));
  // The model binds q as it is stored: no f32 copy of any quantized weight (only the scales are copied).
  int64_t scale_bytes = 0;
  for (const auto& [name, layout] : j["weights"].items())
    scale_bytes += int64_t(f.at(name + ".scale").bytes.size());
  CHECK((*model)->weight_bytes_copied() == scale_bytes);
  // Already quantized: refused.
  auto again = convert::quantize_native_file(q.path, q.path + ".2");
  check_error(again.status(), {"already quantized"});
}

TEST_CASE("quantized file: corrupted scales, values and listings are refused by name") {
  Quantized q;
  const Edited good = Edited::read(q.path);
  const std::string scale = kSquare + ".scale";
  SUBCASE("scale shape") {
    Edited f = good;
    f.at(scale).desc = TensorDesc(DType::f32, {63});
    f.at(scale).bytes.resize(63 * 4);
    check_error(f.load(), {"edited.safetensors", scale.c_str(), "expected F32[64]", "found F32[63]"});
  }
  SUBCASE("scale dtype") {
    Edited f = good;
    f.at(scale).desc = TensorDesc(DType::bf16, {64});
    f.at(scale).bytes.resize(64 * 2);
    check_error(f.load(), {scale.c_str(), "expected F32[64]", "found BF16[64]"});
  }
  SUBCASE("NaN and negative scales") {
    for (const float bad :
         {std::numeric_limits<float>::quiet_NaN(), -1.0f, std::numeric_limits<float>::infinity()}) {
      Edited f = good;
      std::memcpy(f.at(scale).bytes.data() + 4 * 5, &bad, 4);
      check_error(f.load(), {scale.c_str(), "element 5", "expected a finite scale >= 0"});
    }
  }
  SUBCASE("-128") {
    Edited f = good;
    f.at(kSquare).bytes[64 * 2 + 3] = std::byte{0x80};
    check_error(f.load(), {kSquare.c_str(), "element [2, 3] is -128", "expected a value in [-127, 127]"});
  }
  SUBCASE("q without its scales") {
    Edited f = good;
    f.remove(scale);
    check_error(f.load(), {kSquare.c_str(), "without its scales", "missing"});
  }
  SUBCASE("scales without q") {
    Edited f = Edited::read(kBert);
    f.tensors.push_back(good.tensors[0]);
    for (const auto& t : good.tensors)
      if (t.name == scale) f.tensors.back() = t;
    check_error(f.load(), {scale.c_str(), "not listed as quantized"});
  }
  SUBCASE("an I8 tensor not listed") {
    Edited f = good;
    nlohmann::json j = f.quantization();
    j["weights"].erase(kSquare);
    f.set_quantization(j);
    check_error(f.load(), {kSquare.c_str(), "dtype I8 but not listed"});
  }
  SUBCASE("listed but stored as float") {
    Edited f = Edited::read(kBert);
    f.set_quantization({{"scheme", "int8-per-channel"}, {"weights", {{kSquare, "nk"}}}});
    check_error(f.load(), {kSquare.c_str(), "expected dtype I8, found F32"});
  }
  SUBCASE("listed but not a parameter") {
    Edited f = good;
    nlohmann::json j = f.quantization();
    j["weights"]["no.such.weight"] = "nk";
    f.set_quantization(j);
    check_error(f.load(), {"no.such.weight", "not a parameter"});
  }
  SUBCASE("bad listing") {
    for (const char* text :
         {"[]", "{\"scheme\":\"int4\",\"weights\":{}}", "{\"scheme\":\"int8-per-channel\"}",
          "{\"scheme\":\"int8-per-channel\",\"weights\":{},\"x\":1}", "not json"}) {
      CAPTURE(text);
      Edited f = good;
      f.metadata["longrun.quantization"] = text;
      check_error(f.load(), {"edited.safetensors", "longrun.quantization"});
    }
    Edited f = good;
    nlohmann::json j = f.quantization();
    j["weights"][kSquare] = "mn";
    f.set_quantization(j);
    check_error(f.load(), {kSquare.c_str(), "expected layout \"nk\" or \"kn\", found \"mn\""});
  }
  SUBCASE("a layout the graph does not use") {
    // Square, so the scales fit either layout: the graph's use tells them apart.
    Edited f = good;
    nlohmann::json j = f.quantization();
    j["weights"][kSquare] = "kn";
    f.set_quantization(j);
    check_error(f.load(), {"edited.safetensors", kSquare.c_str(), "field layout",
                           "quantized as a linear layer's weight kn", "as a linear layer's weight nk"});
  }
}

TEST_CASE("safetensors I8: read as DType::i8, written back as I8") {
  auto f = SafetensorsFile::open(std::string(LONGRUN_SOURCE_DIR) +
                                 "/tests/fuzz/seeds/safetensors/quantized.safetensors");
  REQUIRE_MESSAGE(f.ok(), f.status().to_string());
  const SafetensorsEntry* w = (*f)->find("w");
  REQUIRE(w != nullptr);
  CHECK(w->desc == TensorDesc(DType::i8, {2, 3}));
  CHECK(int8_t(w->bytes[1]) == -127);
  CHECK((*f)->find("w.scale")->desc.dtype() == DType::f32);
  const SafetensorsWriteEntry entries[] = {{"w", w->desc, w->bytes}};
  auto bytes = serialize_safetensors(entries, {});
  REQUIRE(bytes.ok());
  const std::string text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  CHECK(text.find("\"dtype\":\"I8\"") != std::string::npos);
  const SafetensorsWriteEntry wrong[] = {{"w", TensorDesc(DType::i8, {4}), w->bytes}};  // 6 bytes
  CHECK_FALSE(serialize_safetensors(wrong, {}).ok());
}

}  // namespace
}  // namespace longrun
