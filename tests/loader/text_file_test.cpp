// Whole-file reads of small untrusted text files (config.json, --config, *.index.json,
// tokenizer.json, vocab.txt): the size limit is checked before reading, so a sparse 64 GiB file
// is refused at once naming the file, the limit and the size (reading it first, as the importer
// once did, would allocate 64 GiB), and an endless device is refused once it passes the limit.
#include "longrun/text_file.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "longrun/tokenizer.h"
#include "readers.h"
#include "support/temp_dir.h"

using namespace longrun;
using namespace longrun::convert;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kSparseBytes = uint64_t(64) << 30;

using test_support::TempDir;

// A file of `size` bytes that occupies no disk space (ftruncate leaves a hole).
void make_sparse(const fs::path& p, uint64_t size) {
  const int fd = ::open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  const bool sized = ::ftruncate(fd, off_t(size)) == 0;
  ::close(fd);
  REQUIRE(sized);
}

void check_names_all(const Status& s, std::initializer_list<std::string> parts) {
  REQUIRE_FALSE(s.ok());
  for (const std::string& p : parts) CHECK_MESSAGE(s.message().find(p) != std::string::npos, s.message());
}

}  // namespace

TEST_CASE("text files: a huge sparse JSON file is refused by its size, before reading") {
  TempDir t("text-file");
  const fs::path config = t.path / "config.json";
  make_sparse(config, kSparseBytes);
  const std::string size = std::to_string(kSparseBytes), limit = std::to_string(kMaxConfigBytes);
  check_names_all(read_json_file(config.string()).status(),
                  {config.string(), size + " bytes is larger than the limit of " + limit + " bytes"});
  // Through the readers: an HF directory's config.json, a sharded checkpoint's index.
  check_names_all(read_checkpoint(t.path.string(), "hf", {}).status(), {config.string(), size, limit});
  const fs::path index = t.path / "model.safetensors.index.json";
  make_sparse(index, kSparseBytes);
  check_names_all(read_checkpoint(index.string(), "auto", {}).status(),
                  {index.string(), size, std::to_string(kMaxIndexBytes)});
  // One byte over the limit is refused; exactly the limit is read.
  make_sparse(config, kMaxConfigBytes + 1);
  check_names_all(read_json_file(config.string()).status(), {std::to_string(kMaxConfigBytes + 1) + " bytes"});
  make_sparse(config, kMaxConfigBytes);
  auto exact = read_json_file(config.string());
  REQUIRE_MESSAGE(exact.ok(), exact.status().to_string());
  CHECK(exact->size() == kMaxConfigBytes);
}

TEST_CASE("text files: tokenizer files are size-checked before reading") {
  TempDir t("text-file");
  const fs::path json = t.path / "tokenizer.json";
  make_sparse(json, kSparseBytes);
  check_names_all(Tokenizer::from_tokenizer_json(json.string()).status(),
                  {json.string(), std::to_string(kSparseBytes) + " bytes is larger than the limit of"});
  fs::remove(json);
  const fs::path vocab = t.path / "vocab.txt";
  make_sparse(vocab, kSparseBytes);
  check_names_all(Tokenizer::from_directory(t.path.string()).status(),
                  {vocab.string(), std::to_string(kSparseBytes) + " bytes is larger than the limit of"});
}

TEST_CASE("text files: endless devices stop at the limit; small files, directories, missing files") {
  check_names_all(read_json_file("/dev/zero", 100'000).status(),
                  {"/dev/zero: larger than the limit of 100000 bytes", "reading stopped at"});
  TempDir t("text-file");
  const fs::path small = t.path / "small.json";
  std::ofstream(small) << R"({"a": 1})";
  auto text = read_json_file(small.string());
  REQUIRE_MESSAGE(text.ok(), text.status().to_string());
  CHECK(*text == R"({"a": 1})");
  check_names_all(read_json_file(t.path.string()).status(), {t.path.string(), "is a directory"});
  check_names_all(read_json_file((t.path / "none.json").string()).status(), {"none.json: cannot open"});
}

TEST_CASE("text files: standard input for \"-\" when asked, and the name errors give") {
  TempDir t("text-file");
  // Without dash_is_stdin, "-" is a path like any other.
  check_names_all(read_text_file("-", 100).status(), {"-: cannot open"});
  check_names_all(
      read_text_file((t.path / "none.txt").string(), 100, {.name = "--text-file none.txt"}).status(),
      {"--text-file none.txt: cannot open"});
  const std::string mib = std::to_string(size_t{1} << 20);
  check_names_all(read_json_file("/dev/zero", size_t{1} << 20).status(),
                  {"larger than the limit of " + mib + " bytes (1 MiB) for this file", "reading stopped at"});

  // Standard input from a pipe: read up to its end, left open; past the limit refused.
  const auto from_stdin = [](const std::string& data, size_t max_bytes, const TextFileOptions& options) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    REQUIRE(::write(fds[1], data.data(), data.size()) == ssize_t(data.size()));
    ::close(fds[1]);
    const int saved = ::dup(STDIN_FILENO);
    REQUIRE(saved >= 0);
    REQUIRE(::dup2(fds[0], STDIN_FILENO) == STDIN_FILENO);
    ::close(fds[0]);
    auto r = read_text_file("-", max_bytes, options);
    CHECK(::fcntl(STDIN_FILENO, F_GETFD) != -1);  // not closed
    ::dup2(saved, STDIN_FILENO);
    ::close(saved);
    return r;
  };
  auto in = from_stdin("the man\n", 100, {.dash_is_stdin = true});
  REQUIRE_MESSAGE(in.ok(), in.status().to_string());
  CHECK(*in == "the man\n");
  check_names_all(from_stdin(std::string(200, 'a'), 100, {.dash_is_stdin = true}).status(),
                  {"- (standard input): larger than the limit of 100 bytes", "reading stopped at 200 bytes"});
  check_names_all(
      from_stdin(std::string(200, 'a'), 100, {.dash_is_stdin = true, .name = "--text-file -"}).status(),
      {"--text-file -: larger than"});
}
