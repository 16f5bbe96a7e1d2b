// fairseq RoBERTa, fairseq Lasformer and the bare Hugging Face BartModel layouts:
//  - fairseq_roberta.pt (tests/oracles/make_fairseq_checkpoints.py: roberta_tiny with
//    fairseq >= 0.10 names, a fused in_proj in layer 0, version buffer, tied lm_head.weight,
//    a classification head, args Namespace) converts through --from fairseq to the golden
//    tensors (the token-type table, which fairseq lacks, as zeros) and the oracle's outputs for
//    them; with --set filter_layers the same file gives fourier-roberta;
//  - the lasformer_r2_tiny golden as a fairseq torch.save zip (built here with the pickle and
//    zip helpers: {"model", "cfg": {"model"}}, a fused in_proj, a tied output projection, a
//    version buffer) reads through the fairseq reader and gives the golden tensors and config;
//  - the bart_tiny golden saved as a bare BartModel directory (no "model." prefix, no
//    lm_head, tied embed_tokens copies; built here) is picked up by hf-bart-model without
//    --layout and gives the golden tensors (final_logits_bias zeros).
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>

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

// Pickle pieces with 4-byte ints (BININT) and JSON values (fairseq's cfg is plain data).
namespace pk4 {
using pk::le;
using pk::str;
inline std::string j(int64_t v) { return "J" + le(uint64_t(v), 4); }
inline std::string value(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "\x88" : "\x89";
  if (v.is_number_integer()) return j(v.get<int64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    std::string s = "G";
    for (int i = 7; i >= 0; --i) s += char(uint8_t(bits >> (8 * i)));  // big-endian
    return s;
  }
  if (v.is_string()) return str(v.get<std::string>());
  if (v.is_array()) {
    std::string s = "](";
    for (const auto& x : v) s += value(x);
    return s + "e";
  }
  if (v.is_object()) {
    std::string s = "}(";
    for (const auto& [k, x] : v.items()) s += str(k) + value(x);
    return s + "u";
  }
  return "N";
}
// _rebuild_tensor_v2 of a contiguous f32 view of storage `key` (numel elements).
inline std::string tensor(const std::string& key, int64_t numel, int64_t offset,
                          std::span<const int64_t> dims) {
  std::string s = pk::global("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") +
                  pk::global("torch", "FloatStorage") + str(key) + str("cpu") + j(numel) + "tQ" + j(offset) +
                  "(";
  for (int64_t d : dims) s += j(d);
  s += "t(";
  int64_t stride = 1;
  std::vector<int64_t> strides(dims.size());
  for (size_t i = dims.size(); i-- > 0;) strides[i] = stride, stride *= dims[i];
  for (int64_t st : strides) s += j(st);
  return s + "t\x89" + pk::global("collections", "OrderedDict") + ")RtR";
}
}  // namespace pk4

// The lasformer_r2_tiny golden as fairseq's torch.save would write it: {"model": state dict,
// "cfg": {"model": hyper-parameters}, "optimizer_history": []}; the encoder's layer-0
// self-attention fused into in_proj_weight / in_proj_bias (one storage, q;k;v rows), the
// output projection sharing the decoder table's storage, and a decoder.version buffer.
std::string fairseq_lasformer_zip(const SafetensorsFile& golden, const nlohmann::json& hyper) {
  std::map<std::string, const SafetensorsEntry*> byname;
  for (const SafetensorsEntry& e : golden.tensors()) byname[e.name] = &e;
  std::vector<std::pair<std::string, std::string>> storages;
  std::string items;
  auto add_storage = [&](const std::string& bytes) {
    storages.emplace_back(std::to_string(storages.size()), bytes);
    return storages.back().first;
  };
  auto bytes_of_entry = [](const SafetensorsEntry& e) {
    return std::string(reinterpret_cast<const char*>(e.bytes.data()), e.bytes.size());
  };
  std::string decoder_table_key;
  int64_t decoder_table_numel = 0;
  for (const auto& [name, e] : byname) {
    const std::string fused = "encoder.layers.0.self_attn.";
    if (name.starts_with(fused) &&
        (name.find("q_proj") != std::string::npos || name.find("k_proj") != std::string::npos ||
         name.find("v_proj") != std::string::npos)) {
      if (name.find("q_proj") == std::string::npos) continue;  // written with q
      const std::string kind = name.ends_with("weight") ? "weight" : "bias";
      std::string data;
      for (const char* p : {"q", "k", "v"}) data += bytes_of_entry(*byname.at(fused + p + "_proj." + kind));
      std::vector<int64_t> dims(e->desc.dims().begin(), e->desc.dims().end());
      dims[0] *= 3;
      const int64_t numel = int64_t(data.size() / 4);
      items += pk::str(fused + "in_proj_" + kind) + pk4::tensor(add_storage(data), numel, 0, dims);
      continue;
    }
    const int64_t numel = int64_t(e->bytes.size() / 4);
    const std::string key = add_storage(bytes_of_entry(*e));
    items += pk::str(name) + pk4::tensor(key, numel, 0, e->desc.dims());
    if (name == "decoder.embed_tokens.weight") decoder_table_key = key, decoder_table_numel = numel;
  }
  REQUIRE(!decoder_table_key.empty());
  const auto& table = *byname.at("decoder.embed_tokens.weight");
  items += pk::str("decoder.output_projection.weight") +
           pk4::tensor(decoder_table_key, decoder_table_numel, 0, table.desc.dims());
  const float three = 3.0f;
  const int64_t one[] = {1};
  items += pk::str("decoder.version") +
           pk4::tensor(add_storage(std::string(reinterpret_cast<const char*>(&three), 4)), 1, 0, one);
  const std::string pickle = pk::proto() + "}(" + pk::str("model") +
                             pk::global("collections", "OrderedDict") + ")R(" + items + "u" + pk::str("cfg") +
                             "}(" + pk::str("model") + pk4::value(hyper) + "u" +
                             pk::str("optimizer_history") + "](e" + "u.";
  return make_torch_zip(pickle, storages);
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
  load_with_golden_config(out, "roberta_tiny");
  {
    auto model = Model::load(out);
    REQUIRE_MESSAGE(model.ok(), model.status().to_string());
    // No golden model has roberta_tiny's weights with a zero token-type table:
    // make_fairseq_checkpoints.py ran the oracle on them.
    check_io_golden(**model, checkpoint_dir() + "/fairseq_roberta.n7_pad.io.safetensors");
  }
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
    check_golden_tensors(out, "roberta_tiny", {"embeddings.token_type_embeddings.weight"});
    // No golden model has these weights with filters: make_fairseq_checkpoints.py ran the
    // oracle on them (token-type table zeros) with this config.
    check_io_golden(**model, checkpoint_dir() + "/fairseq_roberta.fourier_l01_r05.n7_pad.io.safetensors");
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

TEST_CASE("convert fairseq: a Lasformer checkpoint (cfg.model, fused in_proj) gives the golden lasformer") {
  auto golden = SafetensorsFile::open(golden_model_path("lasformer_r2_tiny"));
  REQUIRE(golden.ok());
  nlohmann::json hyper = nlohmann::json::parse((*golden)->metadata().at("longrun.config"));
  // fairseq hyper-parameters: arch and training options next to the model's fields; the
  // dictionary sizes are not among them.
  hyper.erase("src_vocab_size");
  hyper.erase("tgt_vocab_size");
  hyper["arch"] = "lasformer_tiny";
  hyper["dropout"] = 0.1;
  hyper["lr"] = {0.0005};
  hyper["optimizer"] = "adam";
  const std::string zip = fairseq_lasformer_zip(**golden, hyper);
  SourceCheckpoint raw;
  const std::vector<std::byte> buffer = bytes_of(zip);  // the tensors view it
  REQUIRE(read_checkpoint_bytes(buffer, "lasformer.pt", {}, &raw).ok());
  auto f = fairseq_from(std::move(raw), "lasformer.pt");
  REQUIRE_MESSAGE(f.ok(), f.status().to_string());
  CHECK(f->hyperparameters_from == "cfg.model");
  CHECK(f->upgraded.size() == 6);  // in_proj_weight / in_proj_bias -> q, k, v
  f->source.config_json = f->hyperparameters_json;
  auto arch = detect_arch(f->source.config_json);
  REQUIRE_MESSAGE(arch.ok(), arch.status().to_string());
  CHECK(*arch == "lasformer");
  const std::string out = temp_out("fairseq_lasformer.safetensors");
  auto summary = convert_as(f->source, "lasformer", "", {}, out);  // the only layout of lasformer
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(summary->layout == "fairseq-lasformer");
  REQUIRE(summary->ignored.size() == 1);
  CHECK(contains(summary->ignored[0],
                 "decoder.output_projection.weight: tied copy of decoder.embed_tokens.weight"));
  check_golden_tensors(out, "lasformer_r2_tiny");
  load_with_golden_config(out, "lasformer_r2_tiny");
  fs::remove(out);

  SUBCASE("a selection weight of the wrong width is named with expected and found") {
    auto bad = convert_as(f->source, "lasformer", "", {"selection_dim=16"}, out);
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
  load_with_golden_config(out, "bart_tiny");
  SUBCASE("without --layout a bad config is reported as such, not as the layouts' misfits") {
    auto r = convert_as(*src, "bart", "", {"encoder_layers=-1"}, out + ".3");
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(), "config for 'bart'"));
    CHECK(contains(r.status().message(), "encoder_layers"));
    CHECK_FALSE(contains(r.status().message(), "problem(s)"));
  }
  SUBCASE("with --layout hf-bart every unprefixed tensor is reported (the first 20 by name)") {
    auto r = convert_as(*src, "bart", "hf-bart", {}, out + ".2");
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(), "(layout hf-bart): 184 problem(s)"));
    CHECK(contains(r.status().message(), "unexpected tensor 'decoder.embed_positions.weight' [162, 64]"));
  }
  fs::remove(out);
  fs::remove_all(dir);
}
