// libFuzzer target for the Hugging Face tokenizer file readers (runtime/src/text/
// tokenizer_json.cpp, tokenizer_files.cpp): tokenizer.json, vocab.txt (WordPiece) and
// vocab.json + merges.txt (byte-level BPE), with tokenizer_config.json and
// special_tokens_map.json.
//
// Built and run by tools/dev/fuzz.sh (seeds: built there from tests/golden/tokenizer). The
// first byte picks the layout: 0 tokenizer.json, 1 vocab.txt, 2 vocab.json; the rest is split
// at lines "@@FILE@@" into the main file, then (layout 2) merges.txt, then
// tokenizer_config.json and special_tokens_map.json. The files are written to a temporary
// directory each iteration and read with Tokenizer::from_directory, as the converter and the
// runtime read them. Properties: no crash, no sanitizer report, every error carries a message;
// an accepted tokenizer encodes a fixed text and the input to ids inside its vocabulary, and
// its metadata re-reads to a tokenizer that serialises identically.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_files.h"
#include "fuzz_input.h"
#include "longrun/tokenizer.h"

namespace {

using fuzz_files::write_file;

using fuzz_input::fail;

const std::string& work_dir() {
  static const std::string dir = [] { return fuzz_files::make_temp_dir("fuzz_tokenizer_files"); }();
  return dir;
}

std::vector<std::string_view> split_files(std::string_view s) {
  static constexpr std::string_view sep = "\n@@FILE@@\n";
  std::vector<std::string_view> parts;
  for (size_t at; (at = s.find(sep)) != std::string_view::npos; s.remove_prefix(at + sep.size()))
    parts.push_back(s.substr(0, at));
  parts.push_back(s);
  return parts;
}

void check(const longrun::Tokenizer& tok, std::string_view input) {
  using namespace longrun;
  for (std::string_view text : {std::string_view("Hello, world! [CLS] caf\xc3\xa9 <s>"), input}) {
    const auto ids = tok.encode(text);
    if (!ids.ok()) {
      if (ids.status().message().empty()) fail();
      continue;
    }
    for (int64_t id : *ids)
      if (id < 0 || id >= tok.vocab_size()) fail();
    const auto back = tok.decode(*ids);
    if (!back.ok() && back.status().message().empty()) fail();
  }
  const std::string meta = tok.to_metadata();
  const auto reread = Tokenizer::from_metadata(meta);
  if (!reread.ok() || reread->to_metadata() != meta) fail();
  (void)tok.description();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace longrun;
  if (size == 0) return 0;
  const int layout = data[0] % 3;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::vector<std::string_view> parts = split_files(rest);
  const std::string& dir = work_dir();
  for (const char* name : {"tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "tokenizer_config.json",
                           "special_tokens_map.json"})
    std::remove((dir + "/" + name).c_str());
  std::vector<std::string> names = {layout == 0   ? "tokenizer.json"
                                    : layout == 1 ? "vocab.txt"
                                                  : "vocab.json"};
  if (layout == 2) names.push_back("merges.txt");
  names.push_back("tokenizer_config.json");
  names.push_back("special_tokens_map.json");
  for (size_t i = 0; i < names.size() && i < parts.size(); ++i) write_file(dir + "/" + names[i], parts[i]);
  const auto tok = Tokenizer::from_directory(dir);
  if (!tok.ok()) {
    if (tok.status().message().empty()) fail();
    return 0;
  }
  check(*tok, parts.back());
  return 0;
}
