// The bert / roberta / fourier-bert / fourier-roberta families beyond the goldens: input and
// config errors name what is wrong, RoBERTa positions follow the padding, absent optional
// inputs mean their HF defaults, and a fourier-* model without filter layers is the plain one.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "models/check_status.h"
#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

// Golden models (tests/oracles/bert.py): V 100, D 64, 2 layers; bert P 300, 2 token types;
// roberta P 304, pad 1 (longest input 302), 1 token type.
const std::string kBert = "bert_tiny.safetensors";
const std::string kRoberta = "roberta_tiny.safetensors";
const std::string kFourierBert = "fourier_bert_l1_r03.safetensors";

Tensor u8_mask(int64_t batch, int64_t n, const std::function<bool(int64_t, int64_t)>& on) {
  const int64_t dims[] = {batch, n};
  Tensor t = Tensor::zeros(DType::u8, dims).value();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[b * n + i] = on(b, i) ? 1 : 0;
  return t;
}

Result<Graph> build(const Model& m, std::vector<std::string> names, std::vector<TensorDesc> descs) {
  return m.build_graph(names, descs);
}

std::span<const float> floats_of(const Tensor& t) { return {t.data<float>(), size_t(t.numel())}; }

// Row `b`, positions [from, from + count) of a [B, N, D] output.
std::vector<float> rows(const Tensor& t, int64_t b, int64_t from, int64_t count) {
  const int64_t n = t.desc().dim(1), d = t.desc().dim(2);
  const float* p = t.data<float>() + (b * n + from) * d;
  return std::vector<float>(p, p + count * d);
}

TEST_CASE("bert models: the four arches are registered and load") {
  const std::vector<std::string> arches = model_architectures();
  for (const char* a : {"bert", "roberta", "fourier-bert", "fourier-roberta"})
    CHECK(std::find(arches.begin(), arches.end(), a) != arches.end());
  auto m = load_golden(kBert);
  CHECK(m->arch() == "bert");
  CHECK(m->weight_bytes_copied() == 0);
  CHECK(m->input_names() == std::vector<std::string>{"input_ids", "attention_mask", "token_type_ids"});
  CHECK(m->output_names() == std::vector<std::string>{"last_hidden_state", "pooled", "logits"});
  CHECK(load_golden(kRoberta)->output_names() == std::vector<std::string>{"last_hidden_state", "logits"});
  CHECK(load_golden(kFourierBert)->output_names() == std::vector<std::string>{"last_hidden_state", "pooled"});
}

TEST_CASE("bert models: input errors name the input") {
  auto bert = load_golden(kBert);
  auto roberta = load_golden(kRoberta);
  auto fourier = load_golden(kFourierBert);
  SUBCASE("too long: bert allows max_position_embeddings, roberta that - pad - 1") {
    CHECK_STATUS(build(*bert, {"input_ids"}, {TensorDesc(DType::i64, {1, 301})}), StatusCode::out_of_range,
                 "301", "300", "max_position_embeddings");
    CHECK(build(*bert, {"input_ids"}, {TensorDesc(DType::i64, {1, 300})}).ok());
    CHECK_STATUS(build(*roberta, {"input_ids"}, {TensorDesc(DType::i64, {1, 303})}), StatusCode::out_of_range,
                 "303", "302", "pad_token_id");
    CHECK(build(*roberta, {"input_ids"}, {TensorDesc(DType::i64, {1, 302})}).ok());
  }
  SUBCASE("token_type_ids must be i32/i64 shaped as input_ids") {
    CHECK_STATUS(build(*bert, {"input_ids", "token_type_ids"},
                       {TensorDesc(DType::i64, {2, 8}), TensorDesc(DType::i64, {2, 7})}),
                 StatusCode::invalid_argument, "token_type_ids", "[2, 8]");
    CHECK_STATUS(build(*bert, {"input_ids", "token_type_ids"},
                       {TensorDesc(DType::i64, {2, 8}), TensorDesc(DType::f32, {2, 8})}),
                 StatusCode::invalid_argument, "token_type_ids");
  }
  SUBCASE("a token type outside the table is a run-time error naming the table") {
    const Tensor ids = ids_tensor(1, 6, [](int64_t, int64_t i) { return 5 + i; });
    const Tensor two = ids_tensor(1, 6, [](int64_t, int64_t i) { return i == 3 ? 2 : 0; });
    CHECK_STATUS(run_model(*bert, {{"input_ids", ids}, {"token_type_ids", two}}), StatusCode::out_of_range,
                 "token_type_embeddings");
    const Tensor one = ids_tensor(1, 6, [](int64_t, int64_t i) { return i == 3 ? 1 : 0; });
    CHECK(run_model(*bert, {{"input_ids", ids}, {"token_type_ids", one}}).ok());
    CHECK_STATUS(run_model(*roberta, {{"input_ids", ids}, {"token_type_ids", one}}), StatusCode::out_of_range,
                 "token_type_embeddings");
  }
  SUBCASE("ids outside the vocabulary") {
    const Tensor ids = ids_tensor(1, 6, [](int64_t, int64_t i) { return i == 2 ? 100 : 5; });
    CHECK_STATUS(run_model(*roberta, {{"input_ids", ids}}), StatusCode::out_of_range, "word_embeddings");
  }
  SUBCASE("a filter needs two positions") {
    CHECK_STATUS(build(*fourier, {"input_ids"}, {TensorDesc(DType::i64, {1, 1})}),
                 StatusCode::invalid_argument, "N >= 2");
    CHECK(build(*bert, {"input_ids"}, {TensorDesc(DType::i64, {1, 1})}).ok());
    const Tensor one_token = ids_tensor(1, 1, [](int64_t, int64_t) { return 7; });
    CHECK(run_model(*roberta, {{"input_ids", one_token}}).ok());
  }
}

TEST_CASE("bert models: config errors name the field") {
  EditableFile f = EditableFile::read(golden_dir() + "/" + kFourierBert);
  auto with = [&](const std::string& from, const std::string& to) {
    return f.load_with_config_edit(from, to);
  };
  CHECK_STATUS(with("\"hidden_act\":\"gelu_new\"", "\"hidden_act\":\"swish\""), StatusCode::format_error,
               "fourier-bert config", "'hidden_act'", "swish");
  CHECK_STATUS(with("\"filter_layers\":[1]", "\"filter_layers\":[2]"), StatusCode::format_error,
               "'filter_layers'");
  CHECK_STATUS(with("\"filter_ratio\":0.3", "\"filter_ratio\":0"), StatusCode::format_error,
               "'filter_ratio'");
  CHECK_STATUS(with("\"num_attention_heads\":4", "\"num_attention_heads\":5"), StatusCode::format_error,
               "'num_attention_heads'", "64");
  CHECK_STATUS(with("\"hidden_act\"", "\"position_embedding_type\":\"relative_key\",\"hidden_act\""),
               StatusCode::unsupported, "position_embedding_type");
  CHECK_STATUS(with("\"hidden_act\"", "\"is_decoder\":true,\"hidden_act\""), StatusCode::unsupported,
               "is_decoder");
  CHECK_STATUS(with("\"hidden_act\"", "\"hiden_size\":64,\"hidden_act\""), StatusCode::format_error,
               "hiden_size");
  // An arch without filters does not know the filter keys.
  f.metadata["longrun.arch"] = "bert";
  CHECK_STATUS(f.load(), StatusCode::format_error, "bert config", "filter_layers");
}

TEST_CASE("bert models: fourier-bert without filter layers is bert, bit for bit") {
  EditableFile f = EditableFile::read(golden_dir() + "/" + kFourierBert);
  std::string c = f.metadata["longrun.config"];
  const std::string filters = "\"filter_layers\":[1],\"filter_ratio\":0.3,";
  REQUIRE(c.find(filters) != std::string::npos);
  c.replace(c.find(filters), filters.size(), "");
  f.metadata["longrun.config"] = c;
  f.metadata["longrun.arch"] = "bert";
  auto plain = f.load();
  const size_t brace = c.find('{');
  f.metadata["longrun.config"] = c.insert(brace + 1, "\"filter_layers\":[],");
  f.metadata["longrun.arch"] = "fourier-bert";
  auto fourier = f.load();
  REQUIRE_MESSAGE(plain.ok(), plain.status().to_string());
  REQUIRE_MESSAGE(fourier.ok(), fourier.status().to_string());
  const Tensor ids = ids_tensor(2, 11, [](int64_t b, int64_t i) { return 1 + (b * 13 + i * 7) % 97; });
  const Tensor mask = u8_mask(2, 11, [](int64_t b, int64_t i) { return b == 0 || i < 6; });
  auto a = run_model(**plain, {{"input_ids", ids}, {"attention_mask", mask}});
  auto b = run_model(**fourier, {{"input_ids", ids}, {"attention_mask", mask}});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (const char* name : {"last_hidden_state", "pooled"}) {
    const Error e = measure(floats_of(a->at(name)), floats_of(b->at(name)));
    CHECK_MESSAGE(e.max_abs == 0.0, name);
  }
}

TEST_CASE("bert models: absent token_type_ids are zeros, absent attention_mask is ones") {
  for (const std::string& name : {kBert, kRoberta}) {
    CAPTURE(name);
    auto m = load_golden(name);
    const Tensor ids = ids_tensor(2, 9, [](int64_t b, int64_t i) { return 2 + (b * 7 + i * 3) % 90; });
    const Tensor zeros = ids_tensor(2, 9, [](int64_t, int64_t) { return 0; });
    const Tensor ones = u8_mask(2, 9, [](int64_t, int64_t) { return true; });
    auto bare = run_model(*m, {{"input_ids", ids}});
    auto full = run_model(*m, {{"input_ids", ids}, {"attention_mask", ones}, {"token_type_ids", zeros}});
    REQUIRE_MESSAGE(bare.ok(), bare.status().to_string());
    REQUIRE_MESSAGE(full.ok(), full.status().to_string());
    for (const char* out : {"last_hidden_state", "logits"}) {
      const Error e = measure(floats_of(bare->at(out)), floats_of(full->at(out)));
      CHECK_MESSAGE(e.max_abs <= 1e-6, out << ": " << e.max_abs);
    }
  }
}

// RoBERTa positions count real tokens only, so a left- or right-padded row gives its real
// tokens the same hidden states as the unpadded sequence (masked keys get zero weight). BERT
// positions are 0..N-1, so left padding changes them: the same check must fail there.
TEST_CASE("bert models: roberta positions follow the padding (left and right)") {
  const int64_t n = 10, pad_count = 4;
  auto word = [](int64_t i) { return 3 + (i * 11) % 90; };
  for (const std::string& name : {kRoberta, kBert}) {
    CAPTURE(name);
    auto m = load_golden(name);
    const int64_t pad = name == kRoberta ? 1 : 0;
    const Tensor alone = ids_tensor(1, n, [&](int64_t, int64_t i) { return word(i); });
    // row 0 right-padded, row 1 left-padded
    const Tensor ids = ids_tensor(2, n + pad_count, [&](int64_t b, int64_t i) {
      if (b == 0) return i < n ? word(i) : pad;
      return i < pad_count ? pad : word(i - pad_count);
    });
    const Tensor mask =
        u8_mask(2, n + pad_count, [&](int64_t b, int64_t i) { return b == 0 ? i < n : i >= pad_count; });
    auto ref = run_model(*m, {{"input_ids", alone}});
    auto got = run_model(*m, {{"input_ids", ids}, {"attention_mask", mask}});
    REQUIRE(ref.ok());
    REQUIRE(got.ok());
    const std::vector<float> want = rows(ref->at("last_hidden_state"), 0, 0, n);
    const Error right = measure(rows(got->at("last_hidden_state"), 0, 0, n), want);
    const Error left = measure(rows(got->at("last_hidden_state"), 1, pad_count, n), want);
    CHECK(right.max_abs <= 1e-5);
    if (name == kRoberta)
      CHECK_MESSAGE(left.max_abs <= 1e-5, left.max_abs);
    else
      CHECK_MESSAGE(left.max_abs > 1e-2, left.max_abs);
  }
}

}  // namespace
}  // namespace longrun::model_tests
