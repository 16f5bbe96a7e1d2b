// The combiner family beyond its goldens: config errors name the field, and the properties
// that define the forms -- causal forms never look ahead (and the internal padding to a
// multiple of s changes nothing), key_padding makes padded tokens invisible, an absent
// attention_mask means all ones.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

EditableFile golden(const std::string& name) {
  EditableFile f = EditableFile::read(golden_dir() + "/" + name + ".safetensors");
  REQUIRE(!f.tensors.empty());
  return f;
}

// The golden's config with `from` replaced by `to`, loaded.
Result<std::shared_ptr<const Model>> with_config(EditableFile f, const std::string& from,
                                                 const std::string& to) {
  std::string c = f.metadata["longrun.config"];
  const size_t at = c.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from << " not in " << c);
  c.replace(at, from.size(), to);
  f.metadata["longrun.config"] = c;
  return f.load();
}

void check_error(const Result<std::shared_ptr<const Model>>& r, std::initializer_list<std::string> parts) {
  REQUIRE_FALSE(r.ok());
  const std::string m = r.status().to_string();
  CAPTURE(m);
  CHECK(r.status().code() == StatusCode::format_error);
  for (const std::string& p : parts) CHECK(has(m, p));
}

TEST_CASE("combiner config: errors name the field") {
  const EditableFile f = golden("combiner_fixed_causal");
  SUBCASE("unknown attention variant") {
    check_error(with_config(f, "\"attention\":\"fixed\"", "\"attention\":\"sparse\""),
                {"'attention'", "\"sparse\"", "\"mixture\""});
  }
  SUBCASE("missing attention") {
    check_error(with_config(f, "\"attention\":\"fixed\",", ""), {"'attention'", "missing"});
  }
  SUBCASE("bidirectional logsparse does not exist") {
    check_error(with_config(golden("combiner_logsparse_causal"), "\"causal\":true", "\"causal\":false"),
                {"'causal'", "logsparse", "only in causal form"});
  }
  SUBCASE("key_padding is for bidirectional forms") {
    check_error(with_config(f, "\"key_padding\":false", "\"key_padding\":true"),
                {"'key_padding'", "bidirectional"});
  }
  SUBCASE("sum pooling only for the bidirectional mixture") {
    check_error(with_config(f, "\"attention\":\"fixed\"", "\"attention\":\"fixed\",\"pooling\":\"sum\""),
                {"'pooling'", "bidirectional mixture"});
    check_error(with_config(golden("combiner_mixture_causal"), "\"attention\":\"mixture\"",
                            "\"attention\":\"mixture\",\"pooling\":\"sum\""),
                {"'pooling'", "causal = true"});
    check_error(
        with_config(golden("combiner_mixture_bidir_sum"), "\"pooling\":\"sum\"", "\"pooling\":\"mean\""),
        {"'pooling'", "\"mean\""});
  }
  SUBCASE("row_summary: one of proj, none, wsum, and for axial only") {
    check_error(with_config(golden("combiner_axial_bidir_none"), "\"row_summary\":\"none\"",
                            "\"row_summary\":\"max\""),
                {"'row_summary'", "\"max\"", "\"wsum\""});
    check_error(with_config(f, "\"attention\":\"fixed\"", "\"attention\":\"fixed\",\"row_summary\":\"none\""),
                {"'row_summary'", "axial"});
  }
  SUBCASE("a 'proj' checkpoint read as row_summary 'none' has tensors the model does not use") {
    check_error(with_config(golden("combiner_axial_causal"), "\"attention\":\"axial\"",
                            "\"attention\":\"axial\",\"row_summary\":\"none\""),
                {"DenseGeneral_1"});
  }
  SUBCASE("max_len must be a multiple of the segment") {
    check_error(with_config(f, "\"max_seg_len\":16", "\"max_seg_len\":17"), {"'max_seg_len'", "multiple"});
  }
  SUBCASE("logsparse needs max_len >= 3") {
    check_error(with_config(golden("combiner_logsparse_causal"), "\"max_len\":257", "\"max_len\":2"),
                {"'max_len'", ">= 3"});
  }
  SUBCASE("qkv_dim must split into heads") {
    check_error(with_config(f, "\"qkv_dim\":32", "\"qkv_dim\":33"), {"'qkv_dim'", "num_heads"});
  }
  SUBCASE("odd emb_dim") {
    check_error(with_config(f, "\"emb_dim\":64", "\"emb_dim\":63"), {"'emb_dim'", "even"});
  }
  SUBCASE("unknown field") {
    check_error(with_config(f, "\"causal\":true", "\"causal\":true,\"casual\":true"),
                {"unknown field 'casual'"});
  }
  SUBCASE("training-only fields are accepted") {
    auto m = with_config(f, "\"causal\":true", "\"causal\":true,\"dropout_rate\":0.1");
    CHECK_MESSAGE(m.ok(), m.status().to_string());
  }
}

TEST_CASE("combiner inputs: attention_mask only with key_padding; length limit") {
  auto causal = Model::load(golden_dir() + "/combiner_fixed_causal.safetensors");
  REQUIRE(causal.ok());
  CHECK((*causal)->input_names() == std::vector<std::string>{"input_ids"});
  CHECK((*causal)->output_names() == std::vector<std::string>{"last_hidden_state", "logits"});
  auto too_long =
      run_model(**causal, {{"input_ids", ids_tensor(1, 321, [](int64_t, int64_t) { return 1; })}});
  REQUIRE_FALSE(too_long.ok());
  CHECK(has(too_long.status().to_string(), "max_len"));
  auto kp = Model::load(golden_dir() + "/combiner_fixed_bidir_kp.safetensors");
  REQUIRE(kp.ok());
  CHECK((*kp)->input_names() == std::vector<std::string>{"input_ids", "attention_mask"});
}

Tensor slice_rows(const Tensor& t, int64_t b, int64_t n) {  // t [B, N, C] -> row b, first n
  const int64_t c = t.desc().dim(2), len = t.desc().dim(1);
  const int64_t dims[] = {n, c};
  Tensor out = Tensor::zeros(DType::f32, dims).value();
  std::memcpy(out.data<float>(), t.data<float>() + b * len * c, size_t(n * c) * sizeof(float));
  return out;
}

std::span<const float> floats(const Tensor& t) { return {t.data<float>(), size_t(t.numel())}; }

TEST_CASE("combiner causal forms: a prefix gives the same outputs (no look-ahead, exact padding)") {
  // 37 tokens vs their first 21 (other padded lengths: 40 vs 24 for s = 8, 48 vs 32 for
  // s = 16); logsparse at 33 vs 21. Tolerance 1e-5: the same math on differently sized
  // blocks may round differently in the last bit, a leak is O(1e-1).
  for (const char* name :
       {"combiner_fixed_causal", "combiner_axial_causal", "combiner_axial_causal_wsum",
        "combiner_axial_causal_none", "combiner_mixture_causal", "combiner_logsparse_causal"}) {
    CAPTURE(name);
    auto m = Model::load(golden_dir() + "/" + name + ".safetensors");
    REQUIRE(m.ok());
    auto id = [](int64_t b, int64_t i) { return 1 + (b * 11 + i * 7) % 37; };
    auto full = run_model(**m, {{"input_ids", ids_tensor(2, 37, id)}});
    auto prefix = run_model(**m, {{"input_ids", ids_tensor(2, 21, id)}});
    REQUIRE_MESSAGE(full.ok(), full.status().to_string());
    REQUIRE_MESSAGE(prefix.ok(), prefix.status().to_string());
    for (const char* out : {"last_hidden_state", "logits"})
      for (int64_t b = 0; b < 2; ++b) {
        const Error e =
            measure(floats(slice_rows(full->at(out), b, 21)), floats(slice_rows(prefix->at(out), b, 21)));
        CHECK_MESSAGE(e.max_abs <= 1e-5, out << " row " << b << ": " << e.max_abs);
      }
  }
}

TEST_CASE("combiner key_padding: padded tokens are invisible; an absent mask means all ones") {
  for (const char* name :
       {"combiner_fixed_bidir_kp", "combiner_axial_bidir_kp", "combiner_mixture_bidir_sum_kp"}) {
    CAPTURE(name);
    auto m = Model::load(golden_dir() + "/" + name + ".safetensors");
    REQUIRE(m.ok());
    const int64_t dims[] = {2, 30};
    Tensor mask = Tensor::zeros(DType::u8, dims).value();
    for (int64_t i = 0; i < 30; ++i)
      mask.data<uint8_t>()[i] = 1, mask.data<uint8_t>()[30 + i] = i < 13 ? 1 : 0;
    auto id_a = [](int64_t b, int64_t i) { return 1 + (b * 5 + i * 3) % 31; };
    auto id_b = [&](int64_t b, int64_t i) { return b == 1 && i >= 13 ? 1 + (i * 13) % 39 : id_a(b, i); };
    auto a = run_model(**m, {{"input_ids", ids_tensor(2, 30, id_a)}, {"attention_mask", mask}});
    auto b = run_model(**m, {{"input_ids", ids_tensor(2, 30, id_b)}, {"attention_mask", mask}});
    REQUIRE_MESSAGE(a.ok(), a.status().to_string());
    REQUIRE(b.ok());
    // Row 1's 13 real tokens do not see what stands in its padding (exactly the same math).
    const Error e = measure(floats(slice_rows(a->at("last_hidden_state"), 1, 13)),
                            floats(slice_rows(b->at("last_hidden_state"), 1, 13)));
    CHECK_MESSAGE(e.max_abs == 0.0, e.max_abs);

    const int64_t one_dims[] = {2, 30};
    Tensor ones = Tensor::zeros(DType::u8, one_dims).value();
    std::fill(ones.data<uint8_t>(), ones.data<uint8_t>() + ones.numel(), uint8_t(1));
    auto with = run_model(**m, {{"input_ids", ids_tensor(2, 30, id_a)}, {"attention_mask", ones}});
    auto without = run_model(**m, {{"input_ids", ids_tensor(2, 30, id_a)}});
    REQUIRE(with.ok());
    REQUIRE(without.ok());
    const Error w = measure(floats(with->at("logits")), floats(without->at("logits")));
    CHECK_MESSAGE(w.max_abs <= 1e-6, w.max_abs);
  }
}

TEST_CASE("combiner weights: an f16 file gives the f32 results (3-D Flax kernels are widened)") {
  // Axial has every kind of parameter: [D, H, hd] / [H, hd, D] kernels, the row-summary LN',
  // Dense kernels and biases, the embedding.
  EditableFile f32 = golden("combiner_axial_causal");
  const EditableFile f16 = to_f16(&f32);
  auto m32 = f32.load();
  auto m16 = f16.load();
  REQUIRE_MESSAGE(m32.ok(), m32.status().to_string());
  REQUIRE_MESSAGE(m16.ok(), m16.status().to_string());
  CHECK((*m16)->weight_bytes_copied() > 0);
  CHECK((*m16)->weight_bytes_copied() < (*m32)->weight_bytes());  // matmul B / LN / embedding stay f16
  const Tensor ids = ids_tensor(2, 29, [](int64_t b, int64_t i) { return 1 + (5 * b + 11 * i) % 39; });
  auto a = run_model(**m32, {{"input_ids", ids}});
  auto b = run_model(**m16, {{"input_ids", ids}});
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  for (const char* name : {"last_hidden_state", "logits"}) {
    const Error e = measure(floats(b->at(name)), floats(a->at(name)));
    CHECK_MESSAGE(e.norm_err <= 1e-6, name << ": " << e.norm_err);
  }
}

}  // namespace
}  // namespace longrun::model_tests
