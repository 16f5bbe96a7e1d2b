// Model loading and graph building on bad files and bad inputs: each gives a Status with a
// message naming the problem, never a crash. Plus the weight binding paths (zero-copy, f16
// kept as stored, misaligned files copied).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "longrun/dtype.h"
#include "models/check_status.h"
#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

const std::string kModel = "fourier_lra_l0_r02.safetensors";  // V 32, D 64, 2 layers, max_seq_len 300

EditableFile golden_model() {
  EditableFile f = EditableFile::read(golden_dir() + "/" + kModel);
  REQUIRE(!f.tensors.empty());
  return f;
}

TEST_CASE("model load: the golden file loads, binds f32 weights in place") {
  auto m = Model::load(golden_dir() + "/" + kModel);
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  CHECK((*m)->arch() == "fourier-lra");
  CHECK((*m)->weight_bytes_copied() == 0);
  CHECK((*m)->weight_bytes() > 0);
  CHECK((*m)->input_names() == std::vector<std::string>{"input_ids", "attention_mask"});
  CHECK((*m)->required_inputs() == std::vector<std::string>{"input_ids"});
  CHECK(contains((*m)->config_json(), "\"filter_layers\":[0]"));
  const std::vector<std::string> arches = model_architectures();
  CHECK(std::find(arches.begin(), arches.end(), "fourier-lra") != arches.end());
}

TEST_CASE("model load: file and metadata errors") {
  SUBCASE("no such file") {
    CHECK_STATUS(Model::load(golden_dir() + "/does_not_exist.safetensors"), StatusCode::not_found,
                 "does_not_exist");
  }
  SUBCASE("not a longrun file") {
    EditableFile f = golden_model();
    f.metadata.erase("longrun.format");
    CHECK_STATUS(f.load(), StatusCode::format_error, "longrun.format", "not a longrun model file");
  }
  SUBCASE("unsupported format version") {
    EditableFile f = golden_model();
    f.metadata["longrun.format"] = "99";
    CHECK_STATUS(f.load(), StatusCode::unsupported, "'99'");
  }
  SUBCASE("unknown arch") {
    EditableFile f = golden_model();
    f.metadata["longrun.arch"] = "fourier-gpt";
    CHECK_STATUS(f.load(), StatusCode::unsupported, "unknown architecture 'fourier-gpt'", "fourier-lra");
  }
  SUBCASE("no config") {
    EditableFile f = golden_model();
    f.metadata.erase("longrun.config");
    CHECK_STATUS(f.load(), StatusCode::format_error, "longrun.config");
  }
}

TEST_CASE("model load: config errors name the field") {
  EditableFile f = golden_model();
  auto with = [&](const std::string& from, const std::string& to) {
    return f.load_with_config_edit(from, to);
  };
  SUBCASE("not JSON") {
    f.metadata["longrun.config"] = "{\"vocab_size\": 32,";
    CHECK_STATUS(f.load(), StatusCode::format_error, "not valid JSON");
  }
  SUBCASE("unknown field") {
    CHECK_STATUS(with("\"filter_layers\"", "\"filter_layers\":[0],\"filter_layer\""),
                 StatusCode::format_error, "unknown field 'filter_layer'");
  }
  SUBCASE("a misspelt field is missing under its real name") {
    CHECK_STATUS(with("\"filter_layers\"", "\"filter_layer\""), StatusCode::format_error, "'filter_layers'",
                 "missing");
  }
  SUBCASE("missing field") {
    CHECK_STATUS(with("\"num_head\":4,", ""), StatusCode::format_error, "'num_head'", "missing");
  }
  SUBCASE("bad value") {
    CHECK_STATUS(with("\"num_head\":4", "\"num_head\":0"), StatusCode::format_error, "'num_head'");
  }
  SUBCASE("filter layer out of range") {
    CHECK_STATUS(with("\"filter_layers\":[0]", "\"filter_layers\":[2]"), StatusCode::format_error,
                 "'filter_layers'");
  }
  SUBCASE("ratio out of range") {
    CHECK_STATUS(with("\"filter_ratio\":0.2", "\"filter_ratio\":0"), StatusCode::format_error,
                 "'filter_ratio'");
  }
  SUBCASE("integer given as a string") {
    CHECK_STATUS(with("\"vocab_size\":32", "\"vocab_size\":\"32\""), StatusCode::format_error,
                 "'vocab_size'");
  }
  SUBCASE("MEAN pooling is not implemented") {
    CHECK_STATUS(with("\"pooling_mode\":\"CLS\"", "\"pooling_mode\":\"MEAN\""), StatusCode::unsupported,
                 "MEAN");
  }
}

TEST_CASE("model load: the tensor set must be exactly the parameter table") {
  EditableFile f = golden_model();
  SUBCASE("missing tensor") {
    f.remove("model.transformer_1.mha.W_k.bias");
    CHECK_STATUS(f.load(), StatusCode::format_error, "missing tensor 'model.transformer_1.mha.W_k.bias'",
                 "expected f32[64]");
  }
  SUBCASE("wrong shape") {
    EditableFile::Entry* e = f.find("model.transformer_0.mlpblock.0.weight");
    REQUIRE(e != nullptr);
    e->desc = TensorDesc(DType::f32, {64, 128});  // transposed: same bytes, wrong shape
    CHECK_STATUS(f.load(), StatusCode::format_error, "'model.transformer_0.mlpblock.0.weight'",
                 "expected shape [128,64], found [64,128]");
  }
  SUBCASE("wrong dtype") {
    EditableFile::Entry* e = f.find("model.norm.bias");
    REQUIRE(e != nullptr);
    e->desc = TensorDesc(DType::i32, {64});
    CHECK_STATUS(f.load(), StatusCode::format_error, "'model.norm.bias'", "F32, F16 or BF16", "I32");
  }
  SUBCASE("extra tensor") {
    f.tensors.push_back(
        {"model.transformer_2.norm1.weight", TensorDesc(DType::f32, {64}), std::vector<std::byte>(256)});
    CHECK_STATUS(f.load(), StatusCode::format_error, "unexpected tensor 'model.transformer_2.norm1.weight'");
  }
  SUBCASE("several problems are all listed") {
    f.remove("model.norm.weight");
    f.remove("model.norm.bias");
    CHECK_STATUS(f.load(), StatusCode::format_error, "2 problems", "'model.norm.weight'",
                 "'model.norm.bias'");
  }
}

TEST_CASE("model graphs: input errors") {
  auto m = Model::load(golden_dir() + "/" + kModel);
  REQUIRE(m.ok());
  const Model& model = **m;
  auto build = [&](std::vector<std::string> names, std::vector<TensorDesc> descs) {
    return model.build_graph(names, descs);
  };
  SUBCASE("sequence longer than max_seq_len") {
    CHECK_STATUS(build({"input_ids"}, {TensorDesc(DType::i64, {1, 301})}), StatusCode::out_of_range, "301",
                 "300");
    CHECK(build({"input_ids"}, {TensorDesc(DType::i64, {1, 300})}).ok());
  }
  SUBCASE("a filter layer needs two positions") {
    CHECK_STATUS(build({"input_ids"}, {TensorDesc(DType::i64, {1, 1})}), StatusCode::invalid_argument,
                 "N >= 2");
  }
  SUBCASE("wrong ids dtype / rank / empty batch") {
    CHECK_STATUS(build({"input_ids"}, {TensorDesc(DType::f32, {1, 8})}), StatusCode::invalid_argument,
                 "input_ids");
    CHECK_STATUS(build({"input_ids"}, {TensorDesc(DType::i64, {8})}), StatusCode::invalid_argument,
                 "input_ids");
    CHECK_STATUS(build({"input_ids"}, {TensorDesc(DType::i64, {0, 8})}), StatusCode::invalid_argument,
                 "B >= 1");
  }
  SUBCASE("mask shape must match") {
    CHECK_STATUS(build({"input_ids", "attention_mask"},
                       {TensorDesc(DType::i64, {2, 8}), TensorDesc(DType::u8, {2, 7})}),
                 StatusCode::invalid_argument, "attention_mask");
  }
  SUBCASE("unknown, duplicate and missing inputs") {
    CHECK_STATUS(build({"input_ids", "token_type_ids"},
                       {TensorDesc(DType::i64, {1, 8}), TensorDesc(DType::i64, {1, 8})}),
                 StatusCode::invalid_argument, "no input 'token_type_ids'");
    CHECK_STATUS(
        build({"input_ids", "input_ids"}, {TensorDesc(DType::i64, {1, 8}), TensorDesc(DType::i64, {1, 8})}),
        StatusCode::invalid_argument, "twice");
    CHECK_STATUS(build({"attention_mask"}, {TensorDesc(DType::u8, {1, 8})}), StatusCode::invalid_argument,
                 "'input_ids' is required");
  }
  SUBCASE("through a session the same error comes from run") {
    auto s = model.create_session(session_options());
    REQUIRE(s.ok());
    const Tensor ids = ids_tensor(1, 400, [](int64_t, int64_t) { return 1; });
    const NamedTensorRef in[] = {{"input_ids", ids.view()}};
    CHECK_STATUS((*s)->run(in), StatusCode::out_of_range, "400");
  }
}

TEST_CASE("model graphs: the fourier-lra dual encoder (Retrieval) takes two named input pairs") {
  auto m = Model::load(golden_dir() + "/fourier_lra_dual_l0_r02.safetensors");  // max_seq_len 140
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  const Model& model = **m;
  std::string joined;
  for (const std::string& n : model.input_names()) joined += n + " ";
  CHECK(joined == "input_ids_0 input_ids_1 attention_mask_0 attention_mask_1 ");
  CHECK(model.required_inputs() == std::vector<std::string>{"input_ids_0", "input_ids_1"});
  CHECK(model.output_names() ==
        std::vector<std::string>{"last_hidden_state_0", "last_hidden_state_1", "logits"});
  CHECK(contains(model.config_json(), "\"dual\":true"));
  auto build = [&](std::vector<std::string> names, std::vector<TensorDesc> descs) {
    return model.build_graph(names, descs);
  };
  const TensorDesc ids(DType::i64, {2, 8});
  CHECK(build({"input_ids_0", "input_ids_1"}, {ids, TensorDesc(DType::i32, {2, 5})}).ok());
  CHECK_STATUS(build({"input_ids"}, {ids}), StatusCode::invalid_argument, "no input 'input_ids'");
  CHECK_STATUS(build({"input_ids_0"}, {ids}), StatusCode::invalid_argument, "'input_ids_1' is required");
  CHECK_STATUS(build({"input_ids_0", "input_ids_1"}, {ids, TensorDesc(DType::i64, {3, 8})}),
               StatusCode::invalid_argument, "batch sizes must match", "2 and 3");
  CHECK_STATUS(build({"input_ids_0", "input_ids_1"}, {ids, TensorDesc(DType::i64, {2, 141})}),
               StatusCode::out_of_range, "input_ids_1", "141");
  CHECK_STATUS(
      build({"input_ids_0", "input_ids_1", "attention_mask_1"}, {ids, ids, TensorDesc(DType::u8, {2, 7})}),
      StatusCode::invalid_argument, "attention_mask_1", "as input_ids_1");
  CHECK_STATUS(build({"input_ids_0", "input_ids_1"}, {TensorDesc(DType::i64, {2, 1}), ids}),
               StatusCode::invalid_argument, "input_ids_0", "N >= 2");
}

TEST_CASE("model runs: ids outside the vocabulary are an error naming the embedding") {
  auto m = Model::load(golden_dir() + "/" + kModel);
  REQUIRE(m.ok());
  for (int64_t bad : {int64_t(32), int64_t(-1), int64_t(1) << 40}) {
    CAPTURE(bad);
    const Tensor ids = ids_tensor(1, 6, [&](int64_t, int64_t i) { return i == 2 ? bad : 3; });
    CHECK_STATUS(run_model(**m, {{"input_ids", ids}}), StatusCode::out_of_range, "word_embeddings");
  }
  // The last token is dropped by append_cls, so an out-of-range id there is never looked up
  // (as in the official code).
  const Tensor ids = ids_tensor(1, 6, [](int64_t, int64_t i) { return i == 5 ? 99 : 3; });
  CHECK(run_model(**m, {{"input_ids", ids}}).ok());
}

// Weights rounded to f16: the f16 file (weights kept as stored where the op takes f16, biases
// widened) and an f32 file of the same rounded values must agree to f32 rounding.
TEST_CASE("model weights: f16 weights stay f16 where ops accept them; misaligned files are copied") {
  EditableFile f32 = golden_model();
  EditableFile f16 = to_f16(&f32);
  auto m32 = f32.load();
  auto m16 = f16.load();
  auto mis = f32.load_misaligned();
  REQUIRE_MESSAGE(m32.ok(), m32.status().to_string());
  REQUIRE_MESSAGE(m16.ok(), m16.status().to_string());
  REQUIRE_MESSAGE(mis.ok(), mis.status().to_string());
  CHECK((*m32)->weight_bytes_copied() == 0);
  // Only the matmul biases are widened (2 layers x 6 linears: 3 x 64 + 64 + 128 + 64 each,
  // plus the head's 128 + 10), as f32.
  CHECK((*m16)->weight_bytes_copied() == 4 * (2 * (3 * 64 + 64 + 128 + 64) + 128 + 10));
  CHECK((*mis)->weight_bytes_copied() == (*mis)->weight_bytes());
  const Tensor ids = ids_tensor(2, 33, [](int64_t b, int64_t i) { return 1 + (5 * b + 11 * i) % 30; });
  auto a = run_model(**m32, {{"input_ids", ids}});
  auto b = run_model(**m16, {{"input_ids", ids}});
  auto c = run_model(**mis, {{"input_ids", ids}});
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  REQUIRE_MESSAGE(c.ok(), c.status().to_string());
  for (const char* name : {"last_hidden_state", "logits"}) {
    CAPTURE(name);
    const auto& ref = a->at(name);
    const std::span<const float> r(ref.data<float>(), size_t(ref.numel()));
    const Error e16 = measure({b->at(name).data<float>(), r.size()}, r);
    const Error emis = measure({c->at(name).data<float>(), r.size()}, r);
    CHECK(e16.norm_err <= 1e-6);
    CHECK(emis.max_abs == 0.0);  // the same f32 values, copied: bit-identical
  }
}

}  // namespace
}  // namespace longrun::model_tests
