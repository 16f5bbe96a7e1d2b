// safetensors writer: round trips through the reader (names, descs, bytes, metadata, 64-byte
// alignment of every mapped tensor), input validation, and atomic replacement (no temp file
// left behind, an existing target untouched on failure).
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "longrun/safetensors.h"
#include "support/temp_dir.h"

using namespace longrun;
namespace fs = std::filesystem;

namespace {

using test_support::TempDir;

std::vector<std::byte> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
  return b;
}

std::vector<std::byte> pattern(size_t n, unsigned seed) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = std::byte((i * 131 + seed * 17 + 1) & 0xFF);
  return b;
}

// Tensors with awkward sizes so fillers are needed, plus scalar, zero-sized and rank-6 ones.
struct Fixture {
  std::vector<std::vector<std::byte>> storage;
  std::vector<SafetensorsWriteEntry> entries;
  std::map<std::string, std::string> metadata = {
      {"longrun.arch", "bert"},
      {"longrun.config", "{\"hidden\": 8, \"name\": \"x\\ny\", \"tab\":\"\t\"}"},
      {"unicode \xc3\xa9", "\xf0\x9f\x98\x80"}};
  Fixture() {
    add("embeddings.weight", TensorDesc(DType::f32, {2, 3}));
    add("ln.bias", TensorDesc(DType::f16, {5}));
    add("scale", TensorDesc(DType::bf16, std::span<const int64_t>()));
    add("ids", TensorDesc(DType::i64, {3}));
    add("empty", TensorDesc(DType::i32, {0, 7}));
    add("empty.inner", TensorDesc(DType::i64, {3, 0}));
    add("mask", TensorDesc(DType::u8, {1, 1, 1, 1, 1, 3}));
    add("counts", TensorDesc(DType::i32, {100}));
  }
  void add(std::string name, TensorDesc desc) {
    storage.push_back(pattern(size_t(desc.nbytes()), unsigned(storage.size())));
    entries.push_back({std::move(name), desc, storage.back()});
  }
};

void check_matches(const SafetensorsFile& f, const Fixture& fx) {
  REQUIRE(f.tensors().size() == fx.entries.size());
  for (size_t i = 0; i < fx.entries.size(); ++i) {
    const SafetensorsEntry& e = f.tensors()[i];
    const SafetensorsWriteEntry& w = fx.entries[i];
    CAPTURE(w.name);
    CHECK(e.name == w.name);
    CHECK(e.desc == w.desc);
    REQUIRE(e.bytes.size() == w.bytes.size());
    if (!w.bytes.empty()) CHECK(std::memcmp(e.bytes.data(), w.bytes.data(), w.bytes.size()) == 0);
    CHECK(e.data_begin % 64 == 0);
    CHECK(f.find(w.name) == &e);
  }
  auto expected = fx.metadata;
  expected["format"] = "pt";
  CHECK(f.metadata() == expected);
}

}  // namespace

TEST_CASE("safetensors writer: round trip through a mapped file") {
  TempDir dir("st-write");
  Fixture fx;
  const std::string path = (dir.path / "model.safetensors").string();
  const Status s = write_safetensors(path, fx.entries, fx.metadata);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  CHECK(dir.names() == std::vector<std::string>{"model.safetensors"});  // no temp file left

  const auto on_disk = read_all(path);
  const auto in_memory = serialize_safetensors(fx.entries, fx.metadata);
  REQUIRE(in_memory.ok());
  CHECK(on_disk == *in_memory);

  // Layout: '{' first, the data section starts at a multiple of 64.
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(on_disk[size_t(i)]) << (8 * i);
  CHECK(char(on_disk[8]) == '{');
  CHECK((8 + n) % 64 == 0);

  std::shared_ptr<SafetensorsFile> f;
  {
    auto r = SafetensorsFile::open(path);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    f = *r;
  }
  check_matches(*f, fx);
  CHECK(f->path() == path);
  CHECK(f->file_size() == fs::file_size(path));
  CHECK(f->find("__pad.0") == nullptr);
  for (const auto& e : f->tensors()) {
    CAPTURE(e.name);
    CHECK(reinterpret_cast<uintptr_t>(e.bytes.data()) % 64 == 0);
  }

  // The mapping outlives the file object while its owner is held.
  const std::span<const std::byte> counts = f->find("counts")->bytes;
  std::shared_ptr<const void> owner = f->owner();
  REQUIRE(owner != nullptr);
  f.reset();
  CHECK(std::memcmp(counts.data(), fx.entries.back().bytes.data(), counts.size()) == 0);
  owner.reset();

  // The in-memory form parses the same way.
  const auto p = SafetensorsFile::parse(*in_memory, nullptr, "memory");
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  check_matches(**p, fx);

  // Overwriting replaces the target atomically.
  Fixture fx2;
  fx2.entries.resize(2);
  REQUIRE(write_safetensors(path, fx2.entries, {}).ok());
  CHECK(dir.names() == std::vector<std::string>{"model.safetensors"});
  const auto again = SafetensorsFile::open(path);
  REQUIRE(again.ok());
  CHECK((*again)->tensors().size() == 2);
  CHECK((*again)->metadata() == std::map<std::string, std::string>{{"format", "pt"}});
}

TEST_CASE("safetensors writer: empty tensor list and caller's format \"pt\"") {
  const auto b = serialize_safetensors({}, {{"format", "pt"}});
  REQUIRE(b.ok());
  CHECK(b->size() % 64 == 0);
  const auto f = SafetensorsFile::parse(*b, nullptr, "empty");
  REQUIRE_MESSAGE(f.ok(), f.status().to_string());
  CHECK((*f)->tensors().empty());
  CHECK((*f)->metadata().at("format") == "pt");
}

TEST_CASE("safetensors writer: invalid inputs are refused and leave the target untouched") {
  TempDir dir("st-write");
  const std::string path = (dir.path / "model.safetensors").string();
  const auto before = pattern(24, 9);
  REQUIRE(write_safetensors(
              path, std::vector<SafetensorsWriteEntry>{{"keep", TensorDesc(DType::f32, {6}), before}}, {})
              .ok());
  const auto original = read_all(path);

  const auto bytes = pattern(24, 1);
  const TensorDesc f32x6(DType::f32, {6});
  const auto strided =
      TensorDesc::make_strided(DType::f32, std::vector<int64_t>{2, 3}, std::vector<int64_t>{1, 2});
  REQUIRE(strided.ok());
  struct Case {
    std::string what;
    std::vector<SafetensorsWriteEntry> entries;
    std::map<std::string, std::string> metadata;
    StatusCode code;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"duplicate names",
       {{"a", f32x6, bytes}, {"a", f32x6, bytes}},
       {},
       StatusCode::invalid_argument,
       "duplicate"},
      {"pad name", {{"__pad.1", f32x6, bytes}}, {}, StatusCode::invalid_argument, "reserved"},
      {"metadata name", {{"__metadata__", f32x6, bytes}}, {}, StatusCode::invalid_argument, "reserved"},
      {"empty name", {{"", f32x6, bytes}}, {}, StatusCode::invalid_argument, "empty"},
      {"long name", {{std::string(1025, 'x'), f32x6, bytes}}, {}, StatusCode::invalid_argument, "1025 bytes"},
      {"non-UTF-8 name", {{"a\xff", f32x6, bytes}}, {}, StatusCode::invalid_argument, "UTF-8"},
      {"byte count",
       {{"a", TensorDesc(DType::f32, {5}), bytes}},
       {},
       StatusCode::invalid_argument,
       "24 bytes given"},
      {"non-contiguous", {{"a", *strided, bytes}}, {}, StatusCode::invalid_argument, "not contiguous"},
      {"format conflict",
       {{"a", f32x6, bytes}},
       {{"format", "tf"}},
       StatusCode::invalid_argument,
       "'format'"},
      {"non-UTF-8 metadata", {{"a", f32x6, bytes}}, {{"k", "\xc0"}}, StatusCode::invalid_argument, "UTF-8"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const Status s = write_safetensors(path, c.entries, c.metadata);
    CAPTURE(s.to_string());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == c.code);
    CHECK(s.message().find(c.needle) != std::string::npos);
    CHECK(s.message().find(path) != std::string::npos);
    CHECK_FALSE(serialize_safetensors(c.entries, c.metadata).ok());
  }
  CHECK(read_all(path) == original);
  CHECK(dir.names() == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("safetensors writer: unwritable destinations fail cleanly") {
  TempDir dir("st-write");
  const auto bytes = pattern(16, 3);
  const std::vector<SafetensorsWriteEntry> one = {{"t", TensorDesc(DType::u8, {16}), bytes}};

  SUBCASE("parent is a regular file") {
    const fs::path file = dir.path / "file";
    std::ofstream(file).put('x');
    const std::string path = (file / "model.safetensors").string();
    const Status s = write_safetensors(path, one, {});
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == StatusCode::io_error);
    CHECK(s.message().find(path) != std::string::npos);
  }
  SUBCASE("missing directory") {
    const std::string path = (dir.path / "no" / "such" / "model.safetensors").string();
    const Status s = write_safetensors(path, one, {});
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == StatusCode::io_error);
    CHECK(s.message().find(path) != std::string::npos);
  }
  SUBCASE("target is a directory") {
    fs::create_directory(dir.path / "model.safetensors");
    const Status s = write_safetensors((dir.path / "model.safetensors").string(), one, {});
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == StatusCode::io_error);
    CHECK(dir.names() == std::vector<std::string>{"model.safetensors"});  // temp removed
  }
  SUBCASE("read-only directory") {
    if (::geteuid() == 0) {
      MESSAGE("skipped: running as root, directory permissions are not enforced");
      return;
    }
    const fs::path ro = dir.path / "ro";
    fs::create_directory(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    const Status s = write_safetensors((ro / "model.safetensors").string(), one, {});
    CHECK(s.code() == StatusCode::io_error);
    fs::permissions(ro, fs::perms::owner_all);
    CHECK(fs::is_empty(ro));
  }
  SUBCASE("a failing write removes the temp file and keeps the old target") {
    // RLIMIT_FSIZE makes write() fail with EFBIG part-way through (SIGXFSZ ignored), even
    // for root: a real I/O failure after the temp file exists.
    const std::string path = (dir.path / "model.safetensors").string();
    REQUIRE(write_safetensors(path, one, {}).ok());
    const auto original = read_all(path);
    const auto big = pattern(1 << 16, 5);
    const std::vector<SafetensorsWriteEntry> large = {{"big", TensorDesc(DType::u8, {1 << 16}), big}};
    rlimit old{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    rlimit small = old;
    small.rlim_cur = 4096;
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    const Status s = write_safetensors(path, large, {});
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    CAPTURE(s.to_string());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == StatusCode::io_error);
    CHECK(s.message().find("write failed") != std::string::npos);
    CHECK(read_all(path) == original);
    CHECK(dir.names() == std::vector<std::string>{"model.safetensors"});
  }
}
