// A native model file that carries its tokenizer (metadata "longrun.tokenizer", what
// longrun-run --text reads): the model still loads, the tokenizer comes back from the file's
// metadata with the expected ids, and those ids run the model; encode_batch over it.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "longrun/models/model.h"
#include "longrun/models/text.h"
#include "longrun/safetensors.h"
#include "longrun/tokenizer.h"
#include "models/model_test_util.h"

using namespace longrun;

namespace {

// A WordPiece tokenizer small enough for the golden fourier-lra model's 32-token vocabulary.
std::string tiny_tokenizer_metadata() {
  std::string vocab, added;
  const char* tokens[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!",
                          ",",     ".",     "long",  "##er",  "run",    "##s",   "the",   "a"};
  for (int i = 0; i < 16; ++i) {
    vocab += std::string(i ? "," : "") + "\"" + tokens[i] + "\"";
    if (i < 5)
      added += std::string(i ? "," : "") + "{\"content\":\"" + tokens[i] + "\",\"id\":" + std::to_string(i) +
               ",\"special\":true,\"lstrip\":false,\"rstrip\":false}";
  }
  return "{\"format\":\"longrun.tokenizer/1\",\"model\":\"wordpiece\",\"vocab\":[" + vocab +
         "],\"merges\":[],\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
         "\"max_input_chars_per_word\":100,\"clean_text\":true,\"handle_chinese_chars\":true,"
         "\"strip_accents\":true,\"lowercase\":true,\"add_prefix_space\":false,\"prefix_ids\":[2],"
         "\"suffix_ids\":[3],\"added_tokens\":[" +
         added + "]}";
}

}  // namespace

TEST_CASE("a model file with a tokenizer: load, tokenize from its metadata, run") {
  auto golden = SafetensorsFile::open(model_tests::golden_dir() + "/fourier_lra_l0_r02.safetensors");
  REQUIRE(golden.ok());
  std::vector<SafetensorsWriteEntry> entries;
  for (const SafetensorsEntry& e : (*golden)->tensors()) entries.push_back({e.name, e.desc, e.bytes});
  std::map<std::string, std::string> meta = (*golden)->metadata();
  meta[std::string(kTokenizerMetadataKey)] = tiny_tokenizer_metadata();
  auto bytes = serialize_safetensors(entries, meta);
  REQUIRE(bytes.ok());
  auto buffer = std::make_shared<std::vector<std::byte>>(std::move(bytes).value());
  auto file = SafetensorsFile::parse(*buffer, buffer, "with_tokenizer.safetensors");
  REQUIRE(file.ok());
  auto model = Model::from_file(*file);
  REQUIRE_MESSAGE(model.ok(), model.status().to_string());

  auto tok = Tokenizer::from_metadata((*file)->metadata().at(std::string(kTokenizerMetadataKey)));
  REQUIRE_MESSAGE(tok.ok(), tok.status().to_string());
  auto ids = tok->encode("Hello, world! Longer runs.");
  REQUIRE(ids.ok());
  CHECK(*ids == std::vector<int64_t>{2, 5, 8, 6, 7, 10, 11, 12, 13, 9, 3});
  CHECK(*tok->decode(*ids) == "hello, world! longer runs.");

  const std::vector<int64_t>& row = *ids;
  std::vector<NamedTensor> inputs;
  inputs.push_back({"input_ids", model_tests::ids_tensor(1, int64_t(row.size()), [&](int64_t, int64_t i) {
                      return row[size_t(i)];
                    })});
  auto from_text = model_tests::run_model(**model, inputs);
  REQUIRE_MESSAGE(from_text.ok(), from_text.status().to_string());
  CHECK(from_text->count("logits") == 1);
}

TEST_CASE("encode_batch: encode_truncated's rows, untruncated lengths, padding, errors naming the text") {
  auto tok = Tokenizer::from_metadata(tiny_tokenizer_metadata());
  REQUIRE_MESSAGE(tok.ok(), tok.status().to_string());
  const std::vector<std::string> texts = {"Hello, world! Longer runs.", "hello"};
  const auto rows = [](const TokenBatch& b) {
    std::vector<std::vector<int64_t>> r;
    const int64_t n = b.input_ids.desc().dim(1);
    for (int64_t i = 0; i < b.input_ids.desc().dim(0); ++i)
      r.emplace_back(b.input_ids.data<int64_t>() + i * n, b.input_ids.data<int64_t>() + (i + 1) * n);
    return r;
  };
  auto whole = encode_batch(*tok, texts);
  REQUIRE_MESSAGE(whole.ok(), whole.status().to_string());
  CHECK(rows(*whole) == std::vector<std::vector<int64_t>>{{2, 5, 8, 6, 7, 10, 11, 12, 13, 9, 3},
                                                          {2, 5, 3, 0, 0, 0, 0, 0, 0, 0, 0}});
  CHECK(whole->lengths == std::vector<int64_t>{11, 3});
  CHECK(whole->untruncated_lengths == std::vector<int64_t>{11, 3});
  CHECK(whole->attention_mask.data<int64_t>()[11 + 2] == 1);
  CHECK(whole->attention_mask.data<int64_t>()[11 + 3] == 0);

  // Cut as encode_truncated cuts ([CLS] text... [SEP]); the untruncated length is kept.
  auto cut = encode_batch(*tok, texts, {.max_length = 4});
  REQUIRE_MESSAGE(cut.ok(), cut.status().to_string());
  auto one = tok->encode_truncated(texts[0], 4);
  REQUIRE(one.ok());
  CHECK(one->ids == std::vector<int64_t>{2, 5, 8, 3});
  CHECK(rows(*cut) == std::vector<std::vector<int64_t>>{one->ids, {2, 5, 3, 0}});
  CHECK(cut->lengths == std::vector<int64_t>{4, 3});
  CHECK(cut->untruncated_lengths == std::vector<int64_t>{11, 3});
  auto padded = encode_batch(*tok, texts, {.max_length = 6, .pad_to_max_length = true});
  REQUIRE(padded.ok());
  CHECK(rows(*padded) == std::vector<std::vector<int64_t>>{{2, 5, 8, 6, 7, 3}, {2, 5, 3, 0, 0, 0}});
  auto plain = encode_batch(*tok, texts, {.add_special_tokens = false, .max_length = 2});
  REQUIRE(plain.ok());
  CHECK(rows(*plain) == std::vector<std::vector<int64_t>>{{5, 8}, {5, 0}});
  CHECK(plain->untruncated_lengths == std::vector<int64_t>{9, 1});

  auto tight = encode_batch(*tok, texts, {.max_length = 1});
  REQUIRE_FALSE(tight.ok());
  CHECK(tight.status().message() ==
        "text 0: truncation: max_length 1 leaves no room for the 2 special tokens");
  const std::vector<std::string> bad = {"hello", "a\xff"}, names = {"first", "second"};
  auto named = encode_batch(*tok, bad, {.names = names});
  REQUIRE_FALSE(named.ok());
  CHECK_MESSAGE(named.status().message().starts_with("second: "), named.status().message());
  CHECK(named.status().message().find("invalid UTF-8 at byte 1") != std::string::npos);
  auto unnamed = encode_batch(*tok, bad);
  REQUIRE_FALSE(unnamed.ok());
  CHECK(unnamed.status().message().starts_with("text 1: "));
  auto mismatch = encode_batch(*tok, bad, {.names = std::span(names).first(1)});
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.status().code() == StatusCode::invalid_argument);
  CHECK_FALSE(encode_batch(*tok, {}).ok());
}
