// The official repositories' configs as they are distributed (tools/convert/official_config.h,
// docs/checkpoints.md#official-configs): each fixture config is written by the generators in
// the official file's own form (tests/oracles/make_torch_checkpoints.py: run_tasks.py's LRA
// model_config; make_hf_checkpoints.py: Fastformer's fastformer.json; make_flax_fixtures.py:
// combiner/jax main.py's TransformerConfig fields and -model). Converting the official
// checkpoints with them gives the golden tensors and outputs; keys that do not affect
// inference are listed in the summary; keys that contradict the family, and unknown keys, fail
// with a message naming the key.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "convert.h"
#include "convert_golden_util.h"
#include "convert_test_util.h"
#include "longrun/models/model.h"
#include "official_config.h"
#include "readers.h"

using namespace longrun;
using namespace longrun::convert;
using namespace longrun::convert_tests;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string fixture_text(const std::string& path) {
  auto text = read_json_file(path);
  REQUIRE_MESSAGE(text.ok(), text.status().to_string());
  return *text;
}

std::string flax_dir() { return std::string(LONGRUN_GOLDEN_DIR) + "/flax"; }

Result<ConvertSummary> convert_with(const std::string& input, const std::string& from,
                                    const std::string& arch, const std::string& config_text,
                                    const std::string& out, const std::vector<std::string>& sets = {}) {
  LR_ASSIGN_OR_RETURN(SourceCheckpoint src, read_checkpoint(input, from, {}));
  LR_ASSIGN_OR_RETURN(std::string config, merge_config(config_text, sets));
  ConvertOptions o;
  o.arch = arch;
  o.config_json = config;
  o.source_label = "test";
  return convert_checkpoint(src, o, out);
}

bool has_note(const ConvertSummary& s, const std::string& part) {
  for (const std::string& n : s.config_notes)
    if (contains(n, part)) return true;
  return false;
}

// translate_official_config on a JSON object literal; the error message when it fails.
std::string translate_error(const char* arch, const nlohmann::json& j) {
  auto t = translate_official_config(arch, j.dump());
  REQUIRE_FALSE_MESSAGE(t.ok(), "translated: " << (t.ok() ? t->config_json : ""));
  return t.status().message();
}

nlohmann::json translated(const char* arch, const nlohmann::json& j) {
  auto t = translate_official_config(arch, j.dump());
  REQUIRE_MESSAGE(t.ok(), t.status().to_string());
  return nlohmann::json::parse(t->config_json);
}

nlohmann::json lra_official() {
  return nlohmann::json::parse(fixture_text(checkpoint_dir() + "/fourier_lra_l12_r05.model_config.json"));
}

}  // namespace

TEST_CASE("official configs: the LRA run_tasks.py model_config converts the official checkpoint") {
  const std::string out = temp_out("lra_model_config.safetensors");
  auto summary = convert_with(checkpoint_dir() + "/fourier_lra_l12_r05.official.pt", "auto", "fourier-lra",
                              fixture_text(checkpoint_dir() + "/fourier_lra_l12_r05.model_config.json"), out);
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(has_note(*summary, "'attn_type' \"dct-0.5\": filter_layers [1,2], filter_ratio 0.5"));
  for (const char* k : {"'mixed_precision'", "'attention_grad_checkpointing'", "'dropout_prob'",
                        "'attention_dropout'", "'learn_pos_emb'", "'tied_weights'"})
    CHECK_MESSAGE(has_note(*summary, k), k);
  check_golden_tensors(out, "fourier_lra_l12_r05");
  auto model = Model::load(out);
  REQUIRE_MESSAGE(model.ok(), model.status().to_string());
  // run_tasks.py rounds max_seq_len up to the position table's 256 rows.
  CHECK(contains((*model)->config_json(), "\"max_seq_len\":256"));
  CHECK(contains((*model)->config_json(), "\"filter_layers\":[1,2]"));
  check_model_io_goldens(**model, "fourier_lra_l12_r05");
  fs::remove(out);
}

TEST_CASE("official configs: the Retrieval dual encoder is recognised from the classifier width") {
  const std::string out = temp_out("lra_dual.safetensors");
  const std::string config = fixture_text(checkpoint_dir() + "/fourier_lra_dual_l0_r02.model_config.json");
  CHECK_FALSE(contains(config, "dual"));
  auto summary = convert_with(checkpoint_dir() + "/fourier_lra_dual_l0_r02.official.pt", "auto",
                              "fourier-lra", config, out);
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  check_golden_tensors(out, "fourier_lra_dual_l0_r02");
  auto model = Model::load(out);
  REQUIRE_MESSAGE(model.ok(), model.status().to_string());
  CHECK(contains((*model)->config_json(), "\"dual\":true"));
  check_model_io_goldens(**model, "fourier_lra_dual_l0_r02");
  fs::remove(out);

  // A config that says dual = false is believed: the classifier's width then does not fit.
  auto wrong = convert_with(checkpoint_dir() + "/fourier_lra_dual_l0_r02.official.pt", "auto", "fourier-lra",
                            config, out, {"dual=false"});
  REQUIRE_FALSE(wrong.ok());
  CHECK(contains(wrong.status().message(), "seq_classifer.mlpblock.0.weight"));
  CHECK(contains(wrong.status().message(), "expected shape [128, 64], found [128, 256]"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("official configs: LRA keys map by attn_type; contradictions and unknown keys name the key") {
  SUBCASE("softmax: every layer is softmax attention, layers and dct_percentage unused") {
    nlohmann::json j = lra_official();
    j["attn_type"] = "softmax";
    const nlohmann::json t = translated("fourier-lra", j);
    CHECK(t["filter_layers"] == nlohmann::json::array());
    CHECK_FALSE(t.contains("layers"));
    CHECK_FALSE(t.contains("dct_percentage"));
    CHECK_FALSE(t.contains("attn_type"));
    CHECK_FALSE(t.contains("mixed_precision"));
  }
  SUBCASE("layers in run_tasks.py's --layers form") {
    nlohmann::json j = lra_official();
    j["layers"] = "0,2";
    CHECK(translated("fourier-lra", j)["filter_layers"] == nlohmann::json::array({0, 2}));
    j["layers"] = "0,,2";
    CHECK(contains(translate_error("fourier-lra", j), "field 'layers'"));
  }
  SUBCASE("an attention the family does not implement") {
    nlohmann::json j = lra_official();
    j["attn_type"] = "none";
    const std::string m = translate_error("fourier-lra", j);
    CHECK(contains(m, "field 'attn_type'"));
    CHECK(contains(m, "\"none\" is not implemented"));
  }
  SUBCASE("a DCT attn_type without DCT layers") {
    nlohmann::json j = lra_official();
    j["layers"] = nlohmann::json::array();
    CHECK(contains(translate_error("fourier-lra", j), "field 'layers'"));
    j.erase("layers");
    CHECK(contains(translate_error("fourier-lra", j), "field 'layers': missing"));
  }
  SUBCASE("missing dct_percentage, missing attn_type, both forms") {
    nlohmann::json j = lra_official();
    j.erase("dct_percentage");
    CHECK(contains(translate_error("fourier-lra", j), "field 'dct_percentage': missing"));
    j = lra_official();
    j.erase("attn_type");
    CHECK(contains(translate_error("fourier-lra", j), "field 'attn_type': missing"));
    j = lra_official();
    j["filter_layers"] = {1};
    CHECK(contains(translate_error("fourier-lra", j), "give one form"));
  }
  SUBCASE("longrun's own form passes unchanged (attn_type left to the family parser)") {
    const std::string longrun = fixture_text(checkpoint_dir() + "/fourier_lra_l12_r05.config.json");
    auto t = translate_official_config("fourier-lra", longrun);
    REQUIRE(t.ok());
    CHECK(nlohmann::json::parse(t->config_json) == nlohmann::json::parse(longrun));
    CHECK(t->notes.empty());
  }
  SUBCASE("an unknown key still fails, by name") {
    nlohmann::json j = lra_official();
    j["num_landmarks"] = 64;
    const std::string out = temp_out("lra_unknown.safetensors");
    auto r = convert_with(checkpoint_dir() + "/fourier_lra_l12_r05.official.pt", "auto", "fourier-lra",
                          j.dump(), out);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(), "unknown field 'num_landmarks'"));
  }
}

TEST_CASE("official configs: Fastformer's fastformer.json as shipped converts the notebook's checkpoint") {
  const std::string shipped = fixture_text(checkpoint_dir() + "/fastformer_d64.fastformer.json");
  CHECK_FALSE(contains(shipped, "num_labels"));
  const std::string out = temp_out("fastformer_json.safetensors");
  auto summary =
      convert_with(checkpoint_dir() + "/fastformer_official.pt", "auto", "fastformer", shipped, out);
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  for (const char* k :
       {"'enable_fp16' \"False\"", "'hidden_dropout_prob'", "'initializer_range'", "'type_vocab_size'"})
    CHECK_MESSAGE(has_note(*summary, k), k);
  check_golden_tensors(out, "fastformer_d64");
  const auto model = load_with_golden_config(out, "fastformer_d64");  // num_labels 4 from dense_linear
  check_model_io_goldens(*model, "fastformer_d64");
  fs::remove(out);

  // Keys whose value contradicts the family, and unknown keys, fail by name.
  for (const auto& [set, part] :
       {std::pair{"hidden_act=relu", "field 'hidden_act'"},
        std::pair{"pooler_type=cls", "field 'pooler_type'"},
        std::pair{"enable_fp16=maybe", "field 'enable_fp16'"},
        std::pair{"num_labels=3", "dense_linear.weight"},
        std::pair{"use_fp16_attention=true", "unknown field 'use_fp16_attention'"}}) {
    CAPTURE(set);
    auto r =
        convert_with(checkpoint_dir() + "/fastformer_official.pt", "auto", "fastformer", shipped, out, {set});
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(contains(r.status().message(), part), r.status().message());
  }
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("official configs: combiner/jax main.py's fields convert the Flax checkpoint") {
  const std::string main_config = fixture_text(flax_dir() + "/combiner_axial_causal.main_config.json");
  const std::string out = temp_out("combiner_main.safetensors");
  auto summary =
      convert_with(flax_dir() + "/combiner_axial_causal.msgpack", "flax", "combiner", main_config, out);
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(has_note(*summary, "'model' \"axial\": attention \"axial\""));
  for (const char* k : {"'output_vocab_size'", "'deterministic'", "'seq_summary'", "'window_size'",
                        "'share_param'", "'dropout_rate'", "'attention_dropout_rate'"})
    CHECK_MESSAGE(has_note(*summary, k), k);
  check_golden_tensors(out, "combiner_axial_causal");
  const auto model = load_with_golden_config(out, "combiner_axial_causal");
  check_model_io_goldens(*model, "combiner_axial_causal");
  fs::remove(out);

  const nlohmann::json j = nlohmann::json::parse(main_config);
  SUBCASE("-model logn is the logsparse form") {
    nlohmann::json k = j;
    k["model"] = "logn";
    CHECK(translated("combiner", k)["attention"] == "logsparse");
  }
  SUBCASE("contradictions name the key") {
    nlohmann::json k = j;
    k["model"] = "performer";
    CHECK(contains(translate_error("combiner", k), "field 'model'"));
    k = j;
    k["attention"] = "fixed";
    CHECK(contains(translate_error("combiner", k), "field 'attention': contradicts 'model'"));
    k = j;
    k["output_vocab_size"] = 41;
    CHECK(contains(translate_error("combiner", k), "field 'output_vocab_size'"));
    k = j;
    k["posemb_init"] = "normal";
    CHECK(contains(translate_error("combiner", k), "field 'posemb_init'"));
  }
  SUBCASE("an unknown key still fails, by name") {
    auto r = convert_with(flax_dir() + "/combiner_axial_causal.msgpack", "flax", "combiner", main_config, out,
                          {"num_memory_slots=4"});
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(), "unknown field 'num_memory_slots'"));
  }
}
