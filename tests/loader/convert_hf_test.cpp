// Hugging Face layouts (hf-bert, hf-roberta, hf-bart): the golden bert / roberta / bart models
// re-saved as HF directories by tests/oracles/make_hf_checkpoints.py (prefixes, buffers, an
// NSP head, tied decoder copies; model.safetensors and a torch.save pytorch_model.bin) convert
// back to exactly the golden tensors, with the arch detected from config.json and the head /
// pooler flags inferred from the tensors. Fourier variants (fourier_bart_l2_r03 as an HF BART
// directory, hf_bert with --set filters), the fairseq BART / Fourier-BART checkpoints (zero
// logits bias) and the Fastformer state_dicts also run on io goldens. Tied copies
// that differ, heads the config excludes and unknown model types are errors that name the tensor or field.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <tuple>

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

std::string golden_model(const std::string& name) { return golden_model_path(name); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Result<ConvertSummary> convert_source(const SourceCheckpoint& src, const std::string& out,
                                      const std::vector<std::string>& sets = {}, std::string arch = {}) {
  LR_ASSIGN_OR_RETURN(std::string config, merge_config(src.config_json, sets));
  if (arch.empty()) {
    LR_ASSIGN_OR_RETURN(arch, detect_arch(config));
  }
  ConvertOptions o;
  o.arch = arch;
  o.config_json = config;
  o.source_label = "test";
  return convert_checkpoint(src, o, out);
}

SourceCheckpoint read_dir(const std::string& name) {
  auto src = read_checkpoint(checkpoint_dir() + "/" + name, "auto", {});
  REQUIRE_MESSAGE(src.ok(), src.status().to_string());
  return std::move(*src);
}

}  // namespace

TEST_CASE("convert hf: bert, roberta (pytorch_model.bin) and bart directories give the golden tensors") {
  struct Case {
    const char* dir;
    const char* golden;
    const char* arch;
    int ignored, retied;
  };
  for (const Case& c :
       {Case{"hf_bert", "bert_tiny", "bert", 5, 0}, Case{"hf_roberta", "roberta_tiny", "roberta", 3, 0},
        Case{"hf_bart", "bart_tiny", "bart", 2, 1}}) {
    CAPTURE(c.dir);
    const SourceCheckpoint src = read_dir(c.dir);
    auto arch = detect_arch(src.config_json);
    REQUIRE(arch.ok());
    CHECK(*arch == c.arch);
    const std::string out = temp_out(std::string(c.dir) + ".safetensors");
    auto summary = convert_source(src, out);
    REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
    CHECK(int(summary->ignored.size()) == c.ignored);
    CHECK(int(summary->retied.size()) == c.retied);
    check_golden_tensors(out, c.golden);
    // Same config as the golden model (mlm_head / add_pooling_layer inferred from the tensors).
    const auto model = load_with_golden_config(out, c.golden);
    auto conv = SafetensorsFile::open(out);
    REQUIRE(conv.ok());
    CHECK(summary->mapped == int((*conv)->tensors().size()));
    CHECK((*conv)->metadata().at("longrun.source") == "test (layout hf-" + std::string(c.arch) + ")");
    fs::remove(out);
  }
}

TEST_CASE("convert fairseq: a transformer checkpoint (fused in_proj, args, tied output) gives the golden") {
  auto f = read_fairseq(checkpoint_dir() + "/fairseq_transformer.pt", {});
  REQUIRE_MESSAGE(f.ok(), f.status().to_string());
  f->source.config_json = f->hyperparameters_json;
  auto arch = detect_arch(f->source.config_json);
  REQUIRE_MESSAGE(arch.ok(), arch.status().to_string());
  CHECK(*arch == "transformer");
  const std::string out = temp_out("fairseq_transformer.safetensors");
  auto summary = convert_source(f->source, out);
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(summary->layout == "fairseq-transformer");
  REQUIRE(summary->ignored.size() == 1);  // the output projection: a copy of the decoder table
  CHECK(contains(summary->ignored[0],
                 "decoder.output_projection.weight: tied copy of decoder.embed_tokens.weight"));
  check_golden_tensors(out, "transformer_base_tiny");
  const auto model = load_with_golden_config(out, "transformer_base_tiny");
  fs::remove(out);
}

TEST_CASE("convert fairseq: bart and the official Fourier-BART args give the golden (zero logits bias)") {
  for (const auto& [file, golden, arch, io] :
       {std::tuple{"fairseq_bart.pt", "bart_tiny", "bart", "fairseq_bart.n7_t5_pad.io.safetensors"},
        std::tuple{"fairseq_fourier_bart.pt", "fourier_bart_l2_r03", "fourier-bart",
                   "fairseq_fourier_bart.n7_t5_pad.io.safetensors"}}) {
    const std::string source = file;  // CAPTURE prints a const char* binding as a pointer
    CAPTURE(source);
    auto f = read_fairseq(checkpoint_dir() + "/" + file, {});
    REQUIRE_MESSAGE(f.ok(), f.status().to_string());
    f->source.config_json = f->hyperparameters_json;
    auto detected = detect_arch(f->source.config_json);
    REQUIRE_MESSAGE(detected.ok(), detected.status().to_string());
    CHECK(*detected == arch);
    const std::string out = temp_out(std::string(file) + ".safetensors");
    ConvertOptions o;
    o.arch = arch;
    o.layout = "fairseq-bart";  // hf-bart also maps bart
    o.config_json = f->source.config_json;
    o.source_label = "test";
    auto summary = convert_checkpoint(f->source, o, out);
    REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
    CHECK(summary->retied.size() == 2);  // model.shared.weight from a copy, final_logits_bias zeros
    check_golden_tensors(out, golden, {"final_logits_bias"});
    const auto model = load_with_golden_config(out, golden);
    // No golden model has these weights with a zero logits bias: make_hf_checkpoints.py ran the
    // oracle on them.
    check_io_golden(*model, checkpoint_dir() + "/" + io);
    fs::remove(out);
  }
}

TEST_CASE(
    "convert fastformer: official state_dicts (wrapper, module. prefix, shared layer) give the golden "
    "and its outputs") {
  for (const auto& [file, golden_name] :
       {std::pair{"fastformer_official.pt", "fastformer_d64"},
        std::pair{"fastformer_shared_official.pt", "fastformer_d64_shared"}}) {
    const std::string source = file;  // CAPTURE prints a const char* binding as a pointer
    CAPTURE(source);
    auto golden = SafetensorsFile::open(golden_model(golden_name));
    REQUIRE(golden.ok());
    auto src = read_checkpoint(checkpoint_dir() + "/" + file, "auto", {});
    REQUIRE_MESSAGE(src.ok(), src.status().to_string());
    src->config_json = (*golden)->metadata().at("longrun.config");
    const std::string out = temp_out(std::string(file) + ".safetensors");
    auto summary = convert_source(*src, out, {}, "fastformer");
    REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
    CHECK(summary->layout == "fastformer-official");
    check_golden_tensors(out, golden_name);
    auto model = Model::load(out);
    REQUIRE_MESSAGE(model.ok(), model.status().to_string());
    check_model_io_goldens(**model, golden_name);
    fs::remove(out);
  }
}

TEST_CASE(
    "convert hf: a BART directory as fourier-bart (--arch, dct fields by --set) gives the golden and "
    "its outputs") {
  const SourceCheckpoint src = read_dir("hf_fourier_bart");
  auto detected = detect_arch(src.config_json);
  REQUIRE(detected.ok());
  CHECK(*detected == "bart");  // the directory is plain BART: the filter comes from --set
  const std::string out = temp_out("hf_fourier_bart.safetensors");
  auto summary = convert_source(src, out, {"dct_layers=[2]", "dct_percentage=0.3"}, "fourier-bart");
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(summary->layout == "hf-bart");
  CHECK(summary->ignored.size() == 1);  // lm_head.weight, the tied copy
  check_golden_tensors(out, "fourier_bart_l2_r03");
  const auto model = load_with_golden_config(out, "fourier_bart_l2_r03");
  check_model_io_goldens(*model, "fourier_bart_l2_r03");
  fs::remove(out);
}

TEST_CASE(
    "convert hf: --set filter_layers picks fourier-bert with the same tensors and the oracle's outputs") {
  const SourceCheckpoint src = read_dir("hf_bert");
  auto config = merge_config(src.config_json, {"filter_layers=[1]", "filter_ratio=0.5"});
  REQUIRE(config.ok());
  auto arch = detect_arch(*config);
  REQUIRE(arch.ok());
  CHECK(*arch == "fourier-bert");
  const std::string out = temp_out("fourier_bert.safetensors");
  auto summary = convert_source(src, out, {"filter_layers=[1]", "filter_ratio=0.5"});
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(summary->mapped == 44);
  check_golden_tensors(out, "bert_tiny");
  auto model = Model::load(out);
  REQUIRE_MESSAGE(model.ok(), model.status().to_string());
  CHECK((*model)->arch() == "fourier-bert");
  // No golden model has bert_tiny's weights with a filter: make_hf_checkpoints.py ran the
  // oracle on them with this config.
  check_io_golden(**model, checkpoint_dir() + "/hf_bert.fourier_l1_r05.n7_pad.io.safetensors");
  fs::remove(out);
}

TEST_CASE("convert hf: errors name the tensor, field or model type; nothing is written") {
  const std::string out = temp_out("bad.safetensors");
  SUBCASE("a tied copy that differs (an untied fine-tune)") {
    SourceCheckpoint src = read_dir("hf_bert");
    std::vector<std::byte> other;
    for (SourceTensor& t : src.tensors)
      if (t.name == "cls.predictions.decoder.weight") {
        other = materialize(t);
        other[5] ^= std::byte{1};
        t.storage = other;
        t.offset = 0;
        t.strides = {t.sizes[1], 1};
      }
    REQUIRE_FALSE(other.empty());
    auto r = convert_source(src, out);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(),
                   "'cls.predictions.decoder.weight' differs from 'bert.embeddings.word_embeddings.weight'"));
  }
  SUBCASE("the config excludes the head the checkpoint has") {
    auto r = convert_source(read_dir("hf_bert"), out, {"mlm_head=false"});
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(), "unexpected tensor 'cls.predictions.bias'"));
    CHECK(contains(r.status().message(), "a tied copy of 'cls.predictions.bias'"));
  }
  SUBCASE("a layout for another architecture") {
    const SourceCheckpoint src = read_dir("hf_bert");
    ConvertOptions o;
    o.arch = "bert";
    o.layout = "hf-bart";
    o.config_json = src.config_json;
    auto r = convert_checkpoint(src, o, out);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(), "--layout 'hf-bart' does not map to architecture 'bert'"));
  }
  SUBCASE("model types without a layout") {
    auto gpt = detect_arch(R"({"model_type": "gpt2"})");
    REQUIRE_FALSE(gpt.ok());
    CHECK(contains(gpt.status().message(), "model_type 'gpt2'"));
    auto none = detect_arch(R"({"hidden_size": 8})");
    REQUIRE_FALSE(none.ok());
    CHECK(contains(none.status().message(), "no model_type"));
    CHECK(*detect_arch(R"({"model_type": "bart", "dct_layers": [0]})") == "fourier-bart");
  }
  CHECK_FALSE(fs::exists(out));
}
