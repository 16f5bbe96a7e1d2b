// The encoder-decoder families (bart, transformer): load and input errors name the problem;
// tied tables are stored once; the parameter tables follow the config flags.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "models/check_status.h"
#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

TEST_CASE("seq2seq: inputs and tied tables") {
  auto bart = load_golden("bart_tiny.safetensors");  // V 120, max_position_embeddings 160
  CHECK(bart->arch() == "bart");
  CHECK(bart->required_inputs() == std::vector<std::string>{"input_ids", "decoder_input_ids"});
  CHECK(bart->input_names() == std::vector<std::string>{"input_ids", "decoder_input_ids", "attention_mask"});
  CHECK(bart->output_names() == std::vector<std::string>{"last_hidden_state", "logits"});
  auto fs = load_golden("transformer_base_tiny.safetensors");
  CHECK(fs->arch() == "transformer");
  // fairseq: padding comes from the ids; there is no attention_mask input.
  CHECK(fs->input_names() == std::vector<std::string>{"input_ids", "decoder_input_ids"});
  // share_decoder_input_output_embed: no decoder.output_projection; share_all: one table.
  EditableFile f = EditableFile::read(golden_dir() + "/transformer_base_tiny.safetensors");
  CHECK(f.find("decoder.output_projection.weight") == nullptr);
  CHECK(f.find("decoder.embed_tokens.weight") != nullptr);
  EditableFile g = EditableFile::read(golden_dir() + "/transformer_preln_shared.safetensors");
  CHECK(g.find("decoder.embed_tokens.weight") == nullptr);
  CHECK(g.find("encoder.layer_norm.weight") != nullptr);
  EditableFile b = EditableFile::read(golden_dir() + "/bart_tiny.safetensors");
  CHECK(b.find("model.shared.weight") != nullptr);
  CHECK(b.find("final_logits_bias") != nullptr);
  CHECK(b.find("lm_head.weight") == nullptr);
}

TEST_CASE("seq2seq: graph input errors name the input") {
  auto bart = load_golden("bart_tiny.safetensors");
  auto build = [&](std::vector<std::string> names, std::vector<TensorDesc> descs) {
    return bart->build_graph(names, descs);
  };
  SUBCASE("decoder_input_ids is required") {
    CHECK_STATUS(build({"input_ids"}, {TensorDesc(DType::i64, {1, 8})}), StatusCode::invalid_argument,
                 "'decoder_input_ids' is required");
  }
  SUBCASE("decoder batch must match") {
    CHECK_STATUS(build({"input_ids", "decoder_input_ids"},
                       {TensorDesc(DType::i64, {2, 8}), TensorDesc(DType::i64, {1, 3})}),
                 StatusCode::invalid_argument, "decoder_input_ids", "[2, T]");
  }
  SUBCASE("decoder longer than its position table") {
    CHECK_STATUS(build({"input_ids", "decoder_input_ids"},
                       {TensorDesc(DType::i64, {1, 8}), TensorDesc(DType::i64, {1, 161})}),
                 StatusCode::invalid_argument, "decoder_input_ids", "160");
    CHECK(build({"input_ids", "decoder_input_ids"},
                {TensorDesc(DType::i64, {1, 8}), TensorDesc(DType::i64, {1, 160})})
              .ok());
  }
  SUBCASE("source longer than max_position_embeddings") {
    CHECK_STATUS(build({"input_ids", "decoder_input_ids"},
                       {TensorDesc(DType::i64, {1, 161}), TensorDesc(DType::i64, {1, 2})}),
                 StatusCode::out_of_range, "161", "max_source_positions");
  }
  SUBCASE("decoder ids of the wrong dtype or rank") {
    CHECK_STATUS(build({"input_ids", "decoder_input_ids"},
                       {TensorDesc(DType::i64, {1, 8}), TensorDesc(DType::f32, {1, 3})}),
                 StatusCode::invalid_argument, "decoder_input_ids");
    CHECK_STATUS(build({"input_ids", "decoder_input_ids"},
                       {TensorDesc(DType::i64, {1, 8}), TensorDesc(DType::i64, {3})}),
                 StatusCode::invalid_argument, "decoder_input_ids");
  }
  SUBCASE("attention_mask is not an input of the fairseq transformer") {
    auto fs = load_golden("transformer_base_tiny.safetensors");
    const std::string names[] = {"input_ids", "decoder_input_ids", "attention_mask"};
    const TensorDesc descs[] = {TensorDesc(DType::i64, {1, 4}), TensorDesc(DType::i64, {1, 2}),
                                TensorDesc(DType::u8, {1, 4})};
    CHECK_STATUS(fs->build_graph(names, descs), StatusCode::invalid_argument, "no input 'attention_mask'");
  }
}

TEST_CASE("seq2seq: target ids outside the vocabulary name the table") {
  auto fs = load_golden("transformer_base_tiny.safetensors");  // V_src 100, V_tgt 90
  const Tensor src = ids_tensor(1, 5, [](int64_t, int64_t i) { return 3 + i; });
  const Tensor dec = ids_tensor(1, 3, [](int64_t, int64_t i) { return i == 1 ? 95 : 2; });
  CHECK_STATUS(run_model(*fs, {{"input_ids", src}, {"decoder_input_ids", dec}}), StatusCode::out_of_range,
               "decoder.embed_tokens");
}

TEST_CASE("seq2seq: config errors") {
  EditableFile f = EditableFile::read(golden_dir() + "/transformer_base_tiny.safetensors");
  auto with = [&](const std::string& from, const std::string& to) {
    return f.load_with_config_edit(from, to);
  };
  CHECK_STATUS(with("\"encoder_attention_heads\":4", "\"encoder_attention_heads\":5"),
               StatusCode::format_error, "'encoder_attention_heads'", "multiple");
  CHECK_STATUS(with("\"encoder_layers\":2", "\"encoder_layers\":2,\"activation_fn\":\"swish\""),
               StatusCode::unsupported, "swish");
  CHECK_STATUS(with("\"encoder_layers\":2", "\"encoder_layers\":2,\"share_all_embeddings\":true"),
               StatusCode::format_error, "share_all_embeddings", "100", "90");
  CHECK_STATUS(with("\"encoder_layers\":2", "\"encoder_layers\":2,\"encoder_learned_pos\":true"),
               StatusCode::unsupported, "decoder_learned_pos");
  CHECK_STATUS(with("\"encoder_layers\":2", "\"encoder_layers\":2,\"encoder_layer\":2"),
               StatusCode::format_error, "unknown field 'encoder_layer'");
  // A config flag changes the table: learned positions need tensors the file lacks.
  CHECK_STATUS(with("\"encoder_layers\":2",
                    "\"encoder_layers\":2,\"encoder_learned_pos\":true,\"decoder_learned_pos\":true"),
               StatusCode::format_error, "missing tensor 'encoder.embed_positions.weight'");
}

}  // namespace
}  // namespace longrun::model_tests

namespace longrun::model_tests {
namespace {

TEST_CASE("seq2seq: fourier-bart inputs and config errors") {
  auto m = Model::load(golden_dir() + "/fourier_bart_l12_r05.safetensors");
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  CHECK((*m)->arch() == "fourier-bart");
  CHECK((*m)->input_names() == std::vector<std::string>{"input_ids", "decoder_input_ids"});
  {
    ModelOptions dbg{.debug_outputs = true};
    auto d = Model::load(golden_dir() + "/fourier_bart_l12_r05.safetensors", dbg);
    REQUIRE(d.ok());
    const auto names = (*d)->output_names();
    CHECK(std::find(names.begin(), names.end(), "debug.encoder.layer1.filtered") != names.end());
    CHECK(std::find(names.begin(), names.end(), "debug.encoder.layer0.filtered") == names.end());
  }
  EditableFile f = EditableFile::read(golden_dir() + "/fourier_bart_l12_r05.safetensors");
  auto with = [&](const std::string& from, const std::string& to) {
    return f.load_with_config_edit(from, to);
  };
  auto check = [](const Result<std::shared_ptr<const Model>>& r, StatusCode code, const std::string& part) {
    REQUIRE_FALSE(r.ok());
    CAPTURE(r.status().to_string());
    CHECK(r.status().code() == code);
    CHECK(r.status().to_string().find(part) != std::string::npos);
  };
  check(with("\"dct_layers\":[1,2]", "\"dct_layers\":[1,3]"), StatusCode::format_error, "'dct_layers'");
  check(with("\"d_model\":32", "\"d_model\":32,\"normalize_before\":true"), StatusCode::unsupported,
        "normalize_before");
  CHECK(with("\"d_model\":32", "\"d_model\":32,\"normalize_before\":false,\"num_beams\":4").ok());
  check(with("\"dct_layers\":[1,2]", "\"dct_layers\":[1,1]"), StatusCode::format_error, "twice");
  check(with("\"dct_percentage\":0.5", "\"dct_percentage\":1.5"), StatusCode::format_error,
        "'dct_percentage'");
  check(with("\"dct_percentage\":0.5", "\"dct_percentage\":0.5,\"global_residual\":false"),
        StatusCode::unsupported, "global_residual");
}

}  // namespace
}  // namespace longrun::model_tests
