// longrun-convert's conversion: the official-format torch.save checkpoints of the lra_vanilla
// golden model (zip with cuda:0 tags, shared storages, offsets and transposed views; legacy
// with a module. prefix) convert to exactly the golden model's weights (bit for bit), load
// as a native model with the same config, and reproduce the golden model's outputs on a golden
// input bit for bit (reference backend). fourier_lra_l12_r05's DataParallel state_dict gives
// its golden's weights and config and matches its io goldens. Mapping errors (missing,
// unexpected, duplicate, wrong-shape tensors, bad config) are reported by name; ignore rules
// and dtype conversion.
#include "convert.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "convert_golden_util.h"
#include "convert_test_util.h"
#include "longrun/models/model.h"
#include "longrun/safetensors.h"
#include "longrun/session.h"
#include "longrun/tensor.h"
#include "readers.h"

using namespace longrun;
using namespace longrun::convert;
using namespace longrun::convert_tests;
namespace fs = std::filesystem;

namespace {

std::string golden_model() { return std::string(LONGRUN_GOLDEN_DIR) + "/models/lra_vanilla.safetensors"; }

std::string config_text(const std::string& model = "lra_vanilla") {
  std::ifstream in(checkpoint_dir() + "/" + model + ".config.json");
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("longrun-convert-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

Result<ConvertSummary> convert_file(const std::string& input, const std::string& out,
                                    std::vector<std::string> sets = {}, std::optional<DType> dtype = {},
                                    const std::string& config_of = "lra_vanilla") {
  LR_ASSIGN_OR_RETURN(SourceCheckpoint src, read_checkpoint(input, "auto", {}));
  LR_ASSIGN_OR_RETURN(std::string config, merge_config(config_text(config_of), sets));
  ConvertOptions o;
  o.arch = "fourier-lra";
  o.config_json = config;
  o.dtype = dtype;
  o.source_label = "test";
  return convert_checkpoint(src, o, out);
}

}  // namespace

TEST_CASE("convert: official zip and legacy checkpoints reproduce the golden model bit for bit") {
  auto golden = SafetensorsFile::open(golden_model());
  REQUIRE(golden.ok());
  auto golden_model_obj = Model::load(golden_model());
  REQUIRE(golden_model_obj.ok());
  const std::vector<NamedTensor> inputs = golden_inputs("lra_vanilla.n7_pad");
  const auto golden_logits = run_once(**golden_model_obj, inputs, "logits");

  for (const char* name : {"lra_vanilla.official.pt", "lra_vanilla.legacy.pt"}) {
    CAPTURE(name);
    const std::string out = temp_path(std::string(name) + ".safetensors");
    auto summary = convert_file(checkpoint_dir() + "/" + name, out);
    REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
    CHECK(summary->mapped == 40);
    CHECK(summary->dtype_conversions == 0);
    auto conv = SafetensorsFile::open(out);
    REQUIRE(conv.ok());
    CHECK((*conv)->tensors().size() == (*golden)->tensors().size());
    for (const SafetensorsEntry& g : (*golden)->tensors()) {
      const SafetensorsEntry* c = (*conv)->find(g.name);
      REQUIRE_MESSAGE(c, g.name);
      CHECK(c->desc.to_string() == g.desc.to_string());
      CHECK_MESSAGE(std::memcmp(c->bytes.data(), g.bytes.data(), g.bytes.size()) == 0, g.name);
      CHECK(reinterpret_cast<uintptr_t>(c->bytes.data()) % 64 == 0);
    }
    const auto& meta = (*conv)->metadata();
    CHECK(meta.at("longrun.format") == "1");
    CHECK(meta.at("longrun.arch") == "fourier-lra");
    CHECK(meta.at("longrun.converter") == kConverterVersion);
    auto model = Model::load(out);
    REQUIRE_MESSAGE(model.ok(), model.status().to_string());
    CHECK((*model)->config_json() == (*golden_model_obj)->config_json());
    CHECK(run_once(**model, inputs, "logits") == golden_logits);
    fs::remove(out);
  }
}

TEST_CASE(
    "convert: the official Fourier LRA state_dict of fourier_lra_l12_r05 (module. prefix, filters before "
    "layers 1 and 2) gives the golden and its outputs") {
  const std::string out = temp_path("fourier_lra_l12_r05.safetensors");
  auto summary =
      convert_file(checkpoint_dir() + "/fourier_lra_l12_r05.official.pt", out, {}, {}, "fourier_lra_l12_r05");
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  check_golden_tensors(out, "fourier_lra_l12_r05");
  const auto model = load_with_golden_config(out, "fourier_lra_l12_r05");
  check_model_io_goldens(*model, "fourier_lra_l12_r05");
  fs::remove(out);
}

TEST_CASE("convert: mapping errors name every tensor; the target file is not written") {
  const std::string in = checkpoint_dir() + "/lra_vanilla.official.pt";
  const std::string out = temp_path("bad.safetensors");
  auto wrong_shape = convert_file(in, out, {"num_classes=5"});
  REQUIRE_FALSE(wrong_shape.ok());
  CHECK(wrong_shape.status().message().find("tensor 'model_state_dict.seq_classifer.mlpblock.2.weight': "
                                            "expected shape [5, 128], found [4, 128]") != std::string::npos);
  auto missing = convert_file(in, out, {"num_layers=3"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("missing tensor 'model.transformer_2.norm1.weight' [64]") !=
        std::string::npos);
  auto bad_config = convert_file(in, out, {"no_such_field=1"});
  REQUIRE_FALSE(bad_config.ok());
  CHECK(bad_config.status().message().find("no_such_field") != std::string::npos);
  CHECK_FALSE(fs::exists(out));

  // Unexpected, duplicate and ignored tensors, from an edited source.
  auto src = read_checkpoint(in, "auto", {});
  REQUIRE(src.ok());
  SourceTensor extra = src->tensors.front();
  extra.name = "model_state_dict.model.extra.weight";
  SourceTensor dup = src->tensors.front();
  dup.name = "module." + dup.name.substr(std::string("model_state_dict.").size());
  SourceTensor opt = src->tensors.front();
  opt.name = "optimizer_state_dict.state.0.exp_avg";
  SourceCheckpoint edited = std::move(*src);
  edited.tensors.push_back(extra);
  edited.tensors.push_back(dup);
  ConvertOptions o;
  o.arch = "fourier-lra";
  o.config_json = merge_config(config_text(), {}).value();
  auto r = convert_checkpoint(edited, o, out);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("unexpected tensor 'model_state_dict.model.extra.weight'") !=
        std::string::npos);
  CHECK(r.status().message().find("appears twice") != std::string::npos);
  edited.tensors.pop_back();
  edited.tensors.pop_back();
  edited.tensors.push_back(opt);
  auto ok = convert_checkpoint(edited, o, out);
  REQUIRE_MESSAGE(ok.ok(), ok.status().to_string());
  REQUIRE(ok->ignored.size() == 1);
  CHECK(ok->ignored[0] == "optimizer_state_dict.state.0.exp_avg: optimizer state (training only)");
  o.arch = "no-such-arch";
  CHECK(convert_checkpoint(edited, o, out).status().code() == StatusCode::unsupported);
  fs::remove(out);
}

TEST_CASE("convert: --dtype f16/bf16 rounds each weight once (round to nearest even)") {
  auto golden = SafetensorsFile::open(golden_model());
  REQUIRE(golden.ok());
  for (DType d : {DType::f16, DType::bf16}) {
    const std::string out = temp_path("half.safetensors");
    auto summary = convert_file(checkpoint_dir() + "/lra_vanilla.official.pt", out, {}, d);
    REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
    CHECK(summary->dtype_conversions == 40);
    auto conv = SafetensorsFile::open(out);
    REQUIRE(conv.ok());
    for (const SafetensorsEntry& g : (*golden)->tensors()) {
      const SafetensorsEntry* c = (*conv)->find(g.name);
      REQUIRE(c);
      REQUIRE(c->desc.dtype() == d);
      const auto* f = reinterpret_cast<const float*>(g.bytes.data());
      const auto* h = reinterpret_cast<const uint16_t*>(c->bytes.data());
      for (int64_t i = 0; i < g.desc.numel(); ++i) {
        const uint16_t want = d == DType::f16 ? f32_to_f16(f[i]) : f32_to_bf16(f[i]);
        if (h[i] != want) FAIL(g.name << "[" << i << "]");
      }
    }
    CHECK(Model::load(out).ok());
    fs::remove(out);
  }
}

TEST_CASE("convert: merge_config applies --set values as JSON or strings") {
  auto c = merge_config(R"({"a": 1, "b": "x"})", {"a=2", "c=[0, 1]", "d=CLS", "e=true"});
  REQUIRE(c.ok());
  CHECK(*c == R"({"a":2,"b":"x","c":[0,1],"d":"CLS","e":true})");
  CHECK_FALSE(merge_config("[1]", {}).ok());
  CHECK_FALSE(merge_config("", {"novalue"}).ok());
}
