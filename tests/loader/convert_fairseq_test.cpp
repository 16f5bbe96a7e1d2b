// fairseq RoBERTa, fairseq Lasformer and the bare Hugging Face BartModel layouts:
//  - fairseq_roberta.pt (tests/reference/make_fairseq_checkpoints.py: roberta_tiny with
//    fairseq >= 0.10 names, a fused in_proj in layer 0, version buffer, tied lm_head.weight,
//    a classification head, args Namespace) converts through --from fairseq to the golden
//    tensors (the token-type table, which fairseq lacks, as zeros); with --set filter_layers
//    the same file gives fourier-roberta;
//  - the lasformer_r2_tiny golden as a fairseq state dict with args-style hyper-parameters
//    (built here: its names are the fairseq ones) gives the golden tensors and config;
//  - the bart_tiny golden saved as a bare BartModel directory (no "model." prefix, no
//    lm_head, tied embed_tokens copies; built here) is picked up by hf-bart-model without
//    --layout and gives the golden tensors (final_logits_bias zeros).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "convert.h"
#include "convert_golden_util.h"
#include "convert_test_util.h"
#include "fairseq.h"
#include "longrun/models/model.h"
#include "longrun/safetensors.h"
#include "readers.h"

using namespace longrun;
using namespace longrun::convert;
using namespace longrun::convert_tests;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Result<ConvertSummary> convert_as(const SourceCheckpoint& src, const std::string& arch,
                                  const std::string& layout, const std::vector<std::string>& sets,
                                  const std::string& out) {
  LR_ASSIGN_OR_RETURN(std::string config, merge_config(src.config_json, sets));
  ConvertOptions o;
  o.arch = arch;
  o.layout = layout;
  o.config_json = config;
  o.source_label = "test";
  return convert_checkpoint(src, o, out);
}

void check_same_config(const std::string& out, const std::string& golden_name) {
  auto model = Model::load(out);
  auto golden = Model::load(golden_model_path(golden_name));
  REQUIRE_MESSAGE(model.ok(), model.status().to_string());
  REQUIRE(golden.ok());
  CHECK((*model)->config_json() == (*golden)->config_json());
}

// A SourceCheckpoint whose tensors view a golden model file (kept open by `owner`).
SourceCheckpoint from_golden(const std::string& name, const std::string& prefix_to_strip,
                             const std::string& prefix_to_add) {
  auto f = SafetensorsFile::open(golden_model_path(name));
  REQUIRE(f.ok());
  SourceCheckpoint src;
  src.format = "test";
  for (const SafetensorsEntry& e : (*f)->tensors()) {
    SourceTensor t;
    t.name = e.name.starts_with(prefix_to_strip) ? e.name.substr(prefix_to_strip.size()) : e.name;
    t.name = prefix_to_add + t.name;
    t.sizes.assign(e.desc.dims().begin(), e.desc.dims().end());
    t.strides.assign(t.sizes.size(), 1);
    for (size_t i = t.sizes.size(); i-- > 1;) t.strides[i - 1] = t.strides[i] * t.sizes[i];
    t.storage = e.bytes;
    t.storage_id = e.name;
    src.tensors.push_back(std::move(t));
  }
  src.owners.push_back(*f);
  return src;
}

}  // namespace

TEST_CASE("convert fairseq: a RoBERTa checkpoint gives the golden roberta (token types zero)") {
  auto f = read_fairseq(checkpoint_dir() + "/fairseq_roberta.pt", {});
  REQUIRE_MESSAGE(f.ok(), f.status().to_string());
  CHECK(std::find(f->dropped.begin(), f->dropped.end(),
                  "encoder.sentence_encoder.version: fairseq version marker") != f->dropped.end());
  f->source.config_json = f->hyperparameters_json;
  auto arch = detect_arch(f->source.config_json);
  REQUIRE_MESSAGE(arch.ok(), arch.status().to_string());
  CHECK(*arch == "roberta");
  const std::string out = temp_out("fairseq_roberta.safetensors");
  auto summary = convert_as(f->source, "roberta", "fairseq-roberta", {}, out);
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(summary->mapped == 42);
  // 4 classification-head tensors + lm_head.weight (a copy of the embedding table)
  CHECK(summary->ignored.size() == 5);
  REQUIRE(summary->retied.size() == 1);
  CHECK(contains(summary->retied[0], "embeddings.token_type_embeddings.weight <- zeros"));
  check_golden_tensors(out, "roberta_tiny", {"embeddings.token_type_embeddings.weight"});
  check_same_config(out, "roberta_tiny");
  fs::remove(out);

  SUBCASE("--set filter_layers makes it fourier-roberta") {
    auto config = merge_config(f->source.config_json, {"filter_layers=[0, 1]", "filter_ratio=0.5"});
    REQUIRE(config.ok());
    CHECK(*detect_arch(*config) == "fourier-roberta");
    auto s = convert_as(f->source, "fourier-roberta", "fairseq-roberta",
                        {"filter_layers=[0, 1]", "filter_ratio=0.5"}, out);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto model = Model::load(out);
    REQUIRE_MESSAGE(model.ok(), model.status().to_string());
    CHECK((*model)->arch() == "fourier-roberta");
    CHECK(contains((*model)->config_json(), "\"filter_ratio\":0.5"));
    fs::remove(out);
  }
  SUBCASE("a fine-tuned lm_head that no longer equals the table is an error naming both") {
    std::vector<std::byte> other;
    for (SourceTensor& t : f->source.tensors)
      if (t.name == "encoder.lm_head.weight") {
        other = materialize(t);
        other[3] ^= std::byte{1};
        t.storage = other;
        t.offset = 0;
      }
    REQUIRE_FALSE(other.empty());
    auto r = convert_as(f->source, "roberta", "fairseq-roberta", {}, out);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(),
                   "'encoder.lm_head.weight' differs from 'encoder.sentence_encoder.embed_tokens.weight'"));
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("convert fairseq: a Lasformer state dict with args gives the golden lasformer") {
  auto golden = SafetensorsFile::open(golden_model_path("lasformer_r2_tiny"));
  REQUIRE(golden.ok());
  nlohmann::json args = nlohmann::json::parse((*golden)->metadata().at("longrun.config"));
  // fairseq args: arch and training options next to the model's fields; no dictionary sizes.
  args.erase("src_vocab_size");
  args.erase("tgt_vocab_size");
  args["arch"] = "lasformer_tiny";
  args["dropout"] = 0.1;
  args["lr"] = {0.0005};
  args["optimizer"] = "adam";
  SourceCheckpoint src = from_golden("lasformer_r2_tiny", "", "");
  src.config_json = args.dump();
  auto arch = detect_arch(src.config_json);
  REQUIRE_MESSAGE(arch.ok(), arch.status().to_string());
  CHECK(*arch == "lasformer");
  const std::string out = temp_out("fairseq_lasformer.safetensors");
  auto summary = convert_as(src, "lasformer", "", {}, out);  // the only layout of lasformer
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(summary->layout == "fairseq-lasformer");
  check_golden_tensors(out, "lasformer_r2_tiny");
  check_same_config(out, "lasformer_r2_tiny");
  fs::remove(out);

  SUBCASE("a selection weight of the wrong width is named with expected and found") {
    auto bad = convert_as(src, "lasformer", "", {"selection_dim=16"}, out);
    REQUIRE_FALSE(bad.ok());
    CHECK(contains(
        bad.status().message(),
        "tensor 'encoder.layers.0.self_attn.select_q.weight': expected shape [16, 64], found [32, 64]"));
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("convert hf: a bare BartModel directory is picked up by hf-bart-model") {
  const fs::path dir = temp_out("hf_bart_model");
  fs::create_directories(dir);
  auto golden = SafetensorsFile::open(golden_model_path("bart_tiny"));
  REQUIRE(golden.ok());
  std::vector<SafetensorsWriteEntry> entries;
  for (const SafetensorsEntry& e : (*golden)->tensors()) {
    if (e.name == "final_logits_bias") continue;  // BartForConditionalGeneration's, not BartModel's
    REQUIRE(e.name.starts_with("model."));
    entries.push_back({e.name.substr(6), e.desc, e.bytes});
  }
  for (const SafetensorsEntry& e : (*golden)->tensors())
    if (e.name == "model.shared.weight")  // torch.save keeps the tied copies; one of them here
      entries.push_back({"encoder.embed_tokens.weight", e.desc, e.bytes});
  REQUIRE(write_safetensors((dir / "model.safetensors").string(), entries, {{"format", "pt"}}).ok());
  nlohmann::json config = nlohmann::json::parse((*golden)->metadata().at("longrun.config"));
  config["model_type"] = "bart";
  config["architectures"] = {"BartModel"};
  std::ofstream((dir / "config.json").string()) << config.dump(2);

  auto src = read_checkpoint(dir.string(), "auto", {});
  REQUIRE_MESSAGE(src.ok(), src.status().to_string());
  auto arch = detect_arch(src->config_json);
  REQUIRE(arch.ok());
  CHECK(*arch == "bart");
  const std::string out = temp_out("hf_bart_model.safetensors");
  auto summary = convert_as(*src, "bart", "", {}, out);
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(summary->layout == "hf-bart-model");
  CHECK(summary->ignored.size() == 1);  // the identical embed_tokens copy
  CHECK(summary->retied.size() == 1);   // final_logits_bias zeros
  check_golden_tensors(out, "bart_tiny", {"final_logits_bias"});
  check_same_config(out, "bart_tiny");
  SUBCASE("with --layout hf-bart every unprefixed tensor is reported (the first 20 by name)") {
    auto r = convert_as(*src, "bart", "hf-bart", {}, out + ".2");
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(), "(layout hf-bart): 184 problem(s)"));
    CHECK(contains(r.status().message(), "unexpected tensor 'decoder.embed_positions.weight' [162, 64]"));
  }
  fs::remove(out);
  fs::remove_all(dir);
}
