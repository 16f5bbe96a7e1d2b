// A native model file that carries its tokenizer (metadata "longrun.tokenizer", what
// longrun-run --text reads): the model still loads, the tokenizer comes back from the file's
// metadata with the expected ids, and those ids run the model.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "longrun/models/model.h"
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
