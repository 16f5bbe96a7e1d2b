// Model::max_input_length() states the limit build_graph enforces: for every golden model file
// with a limit, input_ids one longer is refused with out_of_range naming that length and
// source, and the families' values match their configs (bert_tiny, roberta_tiny).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

std::vector<std::string> model_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(golden_dir())) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".safetensors") && !name.ends_with(".io.safetensors") &&
        !name.ends_with(".gen.safetensors"))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("Model::max_input_length is the limit build_graph enforces, with its source") {
  int with_limit = 0;
  for (const std::string& path : model_files()) {
    CAPTURE(path);
    auto model = Model::load(path);
    REQUIRE_MESSAGE(model.ok(), model.status().to_string());
    const auto limit = (*model)->max_input_length();
    if (!limit) continue;
    ++with_limit;
    REQUIRE(limit->tokens >= 1);
    CHECK(!limit->source.empty());
    // input_ids (both of a dual encoder's) one too long; an encoder-decoder's
    // decoder_input_ids one token.
    const std::vector<std::string> names = (*model)->required_inputs();
    const int64_t too_long[] = {1, limit->tokens + 1}, one[] = {1, 1};
    std::vector<TensorDesc> descs;
    for (const std::string& name : names)
      descs.emplace_back(DType::i64, name.starts_with("input_ids") ? std::span<const int64_t>(too_long)
                                                                   : std::span<const int64_t>(one));
    auto graph = (*model)->build_graph(names, descs);
    REQUIRE_FALSE(graph.ok());
    CAPTURE(graph.status().to_string());
    CHECK(graph.status().code() == StatusCode::out_of_range);
    CHECK(graph.status().message().find("(" + std::to_string(limit->tokens) + ", " + limit->source + ")") !=
          std::string::npos);
  }
  CHECK(with_limit >= 20);

  auto bert = Model::load(golden_dir() + "/bert_tiny.safetensors");
  REQUIRE(bert.ok());
  REQUIRE((*bert)->max_input_length());
  CHECK((*bert)->max_input_length()->source == "max_position_embeddings of the config");
  auto roberta = Model::load(golden_dir() + "/roberta_tiny.safetensors");
  REQUIRE(roberta.ok());
  REQUIRE((*roberta)->max_input_length());
  CHECK((*roberta)->max_input_length()->source.find(" - pad_token_id ") != std::string::npos);
}

}  // namespace
}  // namespace longrun::model_tests
