// Tokenizers against Hugging Face `tokenizers` goldens (tests/golden/tokenizer/expected.json,
// written by tests/oracles/make_tokenizer_goldens.py): exact ids with and without special
// tokens and exact decode() text, for every string and every tokenizer variant and source
// (tokenizer.json, vocab files, metadata round trip); plus the errors on bad files and input.
#include "longrun/tokenizer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

using namespace longrun;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

const fs::path kDir = fs::path(LONGRUN_GOLDEN_DIR) / "tokenizer";

Json load_expected() {
  std::ifstream f(kDir / "expected.json");
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str());
}

Tokenizer must(Result<Tokenizer> r) {
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  return std::move(r).value();
}

// A tokenizer with some metadata fields changed (how the cased / prefix-space variants are made).
Tokenizer with_fields(const Tokenizer& t, const Json& changes) {
  Json j = Json::parse(t.to_metadata());
  for (const auto& [k, v] : changes.items()) j[k] = v;
  return must(Tokenizer::from_metadata(j.dump()));
}

// A scratch directory holding copies of some golden files.
fs::path scratch_with(const std::string& name, const fs::path& from, const std::vector<std::string>& files) {
  const fs::path dir = fs::temp_directory_path() / ("longrun_tokenizer_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string& f : files) fs::copy_file(from / f, dir / f);
  return dir;
}

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// Every string of the golden set: ids, ids without specials, decode(ids).
void check_case(const Tokenizer& tok, const std::string& case_name, const std::string& label) {
  static const Json expected = load_expected();
  const Json& strings = expected["strings"];
  const Json& rows = expected["cases"][case_name];
  REQUIRE(rows.size() == strings.size());
  int matched = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    const std::string s = strings[i].get<std::string>();
    CAPTURE(label);
    CAPTURE(i);
    CAPTURE(s);
    auto ids = tok.encode(s);
    REQUIRE_MESSAGE(ids.ok(), ids.status().to_string());
    CHECK(*ids == rows[i]["ids"].get<std::vector<int64_t>>());
    auto plain = tok.encode(s, /*add_special_tokens=*/false);
    REQUIRE(plain.ok());
    CHECK(*plain == rows[i]["ids_no_special"].get<std::vector<int64_t>>());
    auto text = tok.decode(*ids);
    REQUIRE(text.ok());
    CHECK(*text == rows[i]["decoded"].get<std::string>());
    matched += *ids == rows[i]["ids"].get<std::vector<int64_t>>();
  }
  MESSAGE(label << ": " << matched << "/" << strings.size() << " strings match HF exactly");
}

}  // namespace

TEST_CASE("BERT WordPiece matches HF tokenizers from tokenizer.json, vocab.txt and metadata") {
  const Tokenizer json = must(Tokenizer::from_directory((kDir / "bert").string()));
  CHECK(json.model() == TokenizerModel::wordpiece);
  CHECK(json.vocab_size() == 30522);
  check_case(json, "bert", "bert tokenizer.json");

  const fs::path dir =
      scratch_with("bert", kDir / "bert", {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json"});
  const Tokenizer vocab = must(Tokenizer::from_directory(dir.string()));
  check_case(vocab, "bert", "bert vocab.txt");
  fs::remove_all(dir);

  const Tokenizer round = must(Tokenizer::from_metadata(json.to_metadata()));
  CHECK(round.to_metadata() == json.to_metadata());
  check_case(round, "bert", "bert metadata");
  check_case(with_fields(json, {{"lowercase", false}, {"strip_accents", false}}), "bert_cased", "bert cased");
}

TEST_CASE("byte-level BPE matches HF tokenizers from tokenizer.json, vocab.json + merges.txt and metadata") {
  const Tokenizer json = must(Tokenizer::from_directory((kDir / "bpe").string()));
  CHECK(json.model() == TokenizerModel::byte_level_bpe);
  check_case(json, "bpe", "bpe tokenizer.json");

  const fs::path dir = scratch_with("bpe", kDir / "bpe", {"vocab.json", "merges.txt"});
  const Tokenizer files = must(Tokenizer::from_directory(dir.string()));
  check_case(files, "bpe", "bpe vocab.json + merges.txt");
  fs::remove_all(dir);

  const Tokenizer round = must(Tokenizer::from_metadata(json.to_metadata()));
  check_case(round, "bpe", "bpe metadata");
  check_case(with_fields(json, {{"add_prefix_space", true}}), "bpe_prefix_space", "bpe prefix space");
}

TEST_CASE("encode_truncated cuts the text's tokens at the end and keeps the special tokens (HF truncation)") {
  const std::string text =
      "The quick brown fox jumps over the lazy dog, again and again; \u00e9t\u00e9 <mask>.";
  for (const char* name : {"bert", "bpe"}) {
    CAPTURE(name);
    const Tokenizer tok = must(Tokenizer::from_directory((kDir / name).string()));
    const auto full = tok.encode(text);
    const auto plain = tok.encode(text, /*add_special_tokens=*/false);
    REQUIRE(full.ok());
    REQUIRE(plain.ok());
    const int64_t specials = tok.num_special_tokens();
    REQUIRE(int64_t(full->size()) == int64_t(plain->size()) + specials);
    // full = prefix specials + plain + suffix specials
    const auto at = std::search(full->begin(), full->end(), plain->begin(), plain->end());
    REQUIRE(at != full->end());
    const std::vector<int64_t> prefix(full->begin(), at), suffix(at + ptrdiff_t(plain->size()), full->end());
    const auto n = int64_t(full->size());
    for (int64_t max_length : {std::max<int64_t>(specials, 1), specials + 1, int64_t(7), n - 1, n, n + 10}) {
      CAPTURE(max_length);
      auto r = tok.encode_truncated(text, max_length);
      REQUIRE_MESSAGE(r.ok(), r.status().to_string());
      std::vector<int64_t> expected = *full;
      if (max_length < n) {
        expected = prefix;
        expected.insert(expected.end(), plain->begin(), plain->begin() + ptrdiff_t(max_length - specials));
        expected.insert(expected.end(), suffix.begin(), suffix.end());
      }
      CHECK(r->ids == expected);
      CHECK(r->untruncated_length == n);
    }
    auto no_specials = tok.encode_truncated(text, 3, /*add_special_tokens=*/false);
    REQUIRE(no_specials.ok());
    CHECK(no_specials->ids == std::vector<int64_t>(plain->begin(), plain->begin() + 3));
    CHECK(no_specials->untruncated_length == int64_t(plain->size()));
    auto zero = tok.encode_truncated(text, 0);
    REQUIRE_FALSE(zero.ok());
    CHECK(zero.status().code() == StatusCode::invalid_argument);
    if (specials > 1) {
      auto tight = tok.encode_truncated(text, specials - 1);
      REQUIRE_FALSE(tight.ok());
      CHECK(tight.status().message().find("leaves no room for the " + std::to_string(specials) +
                                          " special tokens") != std::string::npos);
    }
    auto bad = tok.encode_truncated("ab\xff", 10);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find("invalid UTF-8 at byte 2") != std::string::npos);
  }
  const Tokenizer bert = must(Tokenizer::from_directory((kDir / "bert").string()));
  CHECK(bert.num_special_tokens() == 2);
  auto three = bert.encode_truncated("hello world again", 3);
  REQUIRE(three.ok());
  CHECK(three->ids == std::vector<int64_t>{101, 7592, 102});  // [CLS] hello [SEP]
  CHECK(three->untruncated_length == 5);
}

TEST_CASE("encode rejects invalid UTF-8 naming the byte offset") {
  const Tokenizer tok = must(Tokenizer::from_directory((kDir / "bpe").string()));
  for (const std::string& bad : {std::string("ab\xff"), std::string("a\xc3"), std::string("\xed\xa0\x80"),
                                 std::string("\xc0\xaf"), std::string("\xf4\x90\x80\x80")}) {
    auto r = tok.encode(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::invalid_argument);
    CHECK(r.status().message().find("invalid UTF-8 at byte") != std::string::npos);
  }
  auto d = tok.decode(std::vector<int64_t>{0, 999999});
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message().find("999999") != std::string::npos);
}

TEST_CASE("bad vocabulary files give errors naming the file and the problem") {
  const fs::path dir = fs::temp_directory_path() / "longrun_tokenizer_test_bad";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto error_of = [&]() {
    auto r = Tokenizer::from_directory(dir.string());
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK(error_of().find("no tokenizer found") != std::string::npos);

  write_file(dir / "vocab.txt", "[PAD]\n[UNK]\nhello\nhello\n");
  CHECK(error_of().find("'hello' appears twice") != std::string::npos);
  write_file(dir / "vocab.txt", "[PAD]\nhello\n");
  CHECK(error_of().find("unknown token '[UNK]'") != std::string::npos);
  write_file(dir / "vocab.txt", "[UNK]\n\xff\xfe\n");
  CHECK(error_of().find("invalid UTF-8") != std::string::npos);
  fs::remove(dir / "vocab.txt");

  write_file(dir / "vocab.json", R"({"a": 0, "b": 5})");
  write_file(dir / "merges.txt", "#version: 0.2\na b\n");
  CHECK(error_of().find("ids must be 0..1") != std::string::npos);
  write_file(dir / "vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  write_file(dir / "merges.txt", "a c\n");
  CHECK(error_of().find("merge 0") != std::string::npos);
  write_file(dir / "merges.txt", "a b c\n");
  CHECK(error_of().find("line 1") != std::string::npos);
  fs::remove(dir / "vocab.json");
  fs::remove(dir / "merges.txt");

  write_file(dir / "tokenizer.json", R"({"model": {"type": "Unigram", "vocab": {"a": 0}}})");
  CHECK(error_of().find("model.type") != std::string::npos);
  write_file(dir / "tokenizer.json",
             R"({"model": {"type": "WordPiece", "unk_token": "a", "vocab": {"a": 0}},
                 "normalizer": {"type": "NFKC"}, "pre_tokenizer": {"type": "BertPreTokenizer"}})");
  CHECK(error_of().find("normalizer.type = 'NFKC'") != std::string::npos);
  write_file(dir / "tokenizer.json", "{\"model\": ");
  CHECK(error_of().find("not valid JSON") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("metadata is read strictly") {
  const Tokenizer tok = must(Tokenizer::from_directory((kDir / "bpe").string()));
  Json j = Json::parse(tok.to_metadata());
  j["extra"] = 1;
  auto r = Tokenizer::from_metadata(j.dump());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("unknown field 'extra'") != std::string::npos);
  j.erase("extra");
  j["prefix_ids"] = Json::array({1 << 30});
  r = Tokenizer::from_metadata(j.dump());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::out_of_range);
  j.erase("prefix_ids");
  r = Tokenizer::from_metadata(j.dump());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("missing field 'prefix_ids'") != std::string::npos);
  CHECK_FALSE(Tokenizer::from_metadata("[1, 2]").ok());
  CHECK_FALSE(Tokenizer::from_metadata("").ok());
}
