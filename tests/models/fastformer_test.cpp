// The fastformer family beyond its goldens (golden_models_test.cpp runs those): config errors
// name the field, share_layers changes the parameter table, input limits, and the absent
// attention_mask is (input_ids != 0) as in the official Model.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "longrun/dtype.h"
#include "models/check_status.h"
#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

// V 40, D 64, H 4, 2 layers, F 96, max_position_embeddings 300, 4 labels, own weights per layer.
const std::string kModel = "fastformer_d64.safetensors";
// The same sizes with share_layers (H 8, max_position_embeddings 128, 3 labels).
const std::string kShared = "fastformer_d64_shared.safetensors";

EditableFile golden(const std::string& name) {
  EditableFile f = EditableFile::read(golden_dir() + "/" + name);
  REQUIRE(!f.tensors.empty());
  return f;
}

std::span<const float> floats(const Tensor& t) { return {t.data<float>(), size_t(t.numel())}; }

TEST_CASE("fastformer: the golden files load with the official parameter names") {
  auto m = Model::load(golden_dir() + "/" + kModel);
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  CHECK((*m)->arch() == "fastformer");
  CHECK((*m)->weight_bytes_copied() == 0);
  CHECK((*m)->input_names() == std::vector<std::string>{"input_ids", "attention_mask"});
  CHECK((*m)->required_inputs() == std::vector<std::string>{"input_ids"});
  CHECK(contains((*m)->config_json(), "\"share_layers\":false"));
  // 3 embedding-level + 10 per layer x 2 layers as tensors: word, position, LayerNorm (2),
  // per layer 5 attention linears + 3 sublayer linears + 2 LayerNorms (each 2 tensors),
  // pooler 2 linears, dense_linear.
  CHECK((*m)->num_parameters() == 1 + 1 + 2 + 2 * 20 + 4 + 2);
  auto shared = Model::load(golden_dir() + "/" + kShared);
  REQUIRE_MESSAGE(shared.ok(), shared.status().to_string());
  CHECK((*shared)->num_parameters() == 1 + 1 + 2 + 20 + 4 + 2);

  const std::vector<std::string> archs = model_architectures();
  CHECK(std::find(archs.begin(), archs.end(), "fastformer") != archs.end());
  auto table = model_parameters("fastformer", (*m)->config_json());
  REQUIRE_MESSAGE(table.ok(), table.status().to_string());
  CHECK(int(table->size()) == (*m)->num_parameters());
  CHECK(table->front().name == "word_embedding.weight");
  CHECK(table->front().dims == std::vector<int64_t>{40, 64});
  CHECK_STATUS(model_parameters("fastformer-xl", "{}"), StatusCode::unsupported, "fastformer-xl");
}

TEST_CASE("fastformer: config errors name the field") {
  EditableFile f = golden(kModel);
  auto with = [&](const std::string& from, const std::string& to) {
    return f.load_with_config_edit(from, to);
  };
  SUBCASE("hidden_size must be a multiple of the heads") {
    CHECK_STATUS(with("\"num_attention_heads\":4", "\"num_attention_heads\":5"), StatusCode::format_error,
                 "'num_attention_heads'", "multiple");
  }
  SUBCASE("missing field") {
    CHECK_STATUS(with("\"num_labels\":4,", ""), StatusCode::format_error, "'num_labels'", "missing");
  }
  SUBCASE("unknown field") {
    CHECK_STATUS(with("\"share_layers\"", "\"share_layer\":true,\"share_layers\""), StatusCode::format_error,
                 "unknown field 'share_layer'");
  }
  SUBCASE("share_layers must be a boolean") {
    CHECK_STATUS(with("\"share_layers\":false", "\"share_layers\":0"), StatusCode::format_error,
                 "'share_layers'");
  }
  SUBCASE("layer_norm_eps out of range") {
    CHECK_STATUS(with("\"layer_norm_eps\":1e-12", "\"layer_norm_eps\":0"), StatusCode::format_error,
                 "'layer_norm_eps'");
  }
  SUBCASE("only exact GELU") {
    CHECK_STATUS(with("\"hidden_act\":\"gelu\"", "\"hidden_act\":\"relu\""), StatusCode::unsupported,
                 "'hidden_act'", "relu");
  }
  SUBCASE("only the weightpooler") {
    CHECK_STATUS(with("\"pooler_type\":\"weightpooler\"", "\"pooler_type\":\"cls\""), StatusCode::unsupported,
                 "'pooler_type'", "cls");
  }
  SUBCASE("training-only keys are accepted") {
    auto m =
        with("\"share_layers\"", "\"hidden_dropout_prob\":0.2,\"initializer_range\":0.02,\"share_layers\"");
    CHECK_MESSAGE(m.ok(), m.status().to_string());
  }
  SUBCASE("share_layers on a file with per-layer weights: the second set is unexpected") {
    CHECK_STATUS(with("\"share_layers\":false", "\"share_layers\":true"), StatusCode::format_error,
                 "unexpected tensor 'fastformer_model.encoders.1.");
  }
}

TEST_CASE("fastformer: a shared-layer file needs exactly one weight set") {
  EditableFile f = golden(kShared);
  SUBCASE("the shared set is encoders.0") {
    f.remove("fastformer_model.encoders.0.attention.self.key_att.bias");
    CHECK_STATUS(f.load(), StatusCode::format_error,
                 "missing tensor 'fastformer_model.encoders.0.attention.self.key_att.bias'",
                 "expected f32[8]");
  }
  SUBCASE("turning sharing off asks for the second set") {
    std::string& c = f.metadata["longrun.config"];
    const size_t at = c.find("\"share_layers\":true");
    REQUIRE(at != std::string::npos);
    c.replace(at, 19, "\"share_layers\":false");
    CHECK_STATUS(f.load(), StatusCode::format_error, "missing tensor 'fastformer_model.encoders.1.");
  }
}

TEST_CASE("fastformer: input limits") {
  auto m = Model::load(golden_dir() + "/" + kShared);
  REQUIRE(m.ok());
  const Model& model = **m;
  const std::vector<std::string> ids_only = {"input_ids"};
  CHECK_STATUS(model.build_graph(ids_only, std::vector<TensorDesc>{TensorDesc(DType::i64, {1, 129})}),
               StatusCode::out_of_range, "129", "max_position_embeddings");
  CHECK(model.build_graph(ids_only, std::vector<TensorDesc>{TensorDesc(DType::i32, {3, 128})}).ok());
  CHECK(model.build_graph(ids_only, std::vector<TensorDesc>{TensorDesc(DType::i64, {1, 1})}).ok());
  const Tensor ids = ids_tensor(1, 6, [](int64_t, int64_t i) { return i == 2 ? 40 : 3; });
  CHECK_STATUS(run_model(model, {{"input_ids", ids}}), StatusCode::out_of_range, "word_embedding");
}

TEST_CASE("fastformer: an absent attention_mask is input_ids != 0") {
  auto m = Model::load(golden_dir() + "/" + kModel);
  REQUIRE(m.ok());
  // Zeros scattered inside the rows, not only as right padding.
  const auto id = [](int64_t b, int64_t i) -> int64_t {
    return (b * 5 + i) % 4 == 0 ? 0 : 1 + (b * 7 + i * 3) % 39;
  };
  const Tensor ids = ids_tensor(2, 11, id);
  const int64_t dims[] = {2, 11};
  Tensor mask = Tensor::zeros(DType::u8, dims).value();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 11; ++i) mask.data<uint8_t>()[b * 11 + i] = id(b, i) != 0;
  Tensor ones = Tensor::zeros(DType::u8, dims).value();
  std::fill(ones.data<uint8_t>(), ones.data<uint8_t>() + ones.numel(), uint8_t(1));
  auto derived = run_model(**m, {{"input_ids", ids}});
  auto given = run_model(**m, {{"input_ids", ids}, {"attention_mask", mask}});
  auto all = run_model(**m, {{"input_ids", ids}, {"attention_mask", ones}});
  REQUIRE_MESSAGE(derived.ok(), derived.status().to_string());
  REQUIRE(given.ok());
  REQUIRE(all.ok());
  for (const char* name : {"last_hidden_state", "pooled", "logits"}) {
    CAPTURE(name);
    CHECK(measure(floats(derived->at(name)), floats(given->at(name))).max_abs == 0.0);
    // The mask matters: treating the zeros as tokens changes every output.
    CHECK(measure(floats(all->at(name)), floats(given->at(name))).max_abs > 1e-3);
  }
}

}  // namespace
}  // namespace longrun::model_tests
