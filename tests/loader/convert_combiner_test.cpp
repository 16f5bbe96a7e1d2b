// Combiner imports (tools/convert/mapping_combiner.cpp): the combiner_axial_causal golden model
// saved as the official JAX code would (Flax msgpack of a flax.optim Optimizer, written by
// tests/oracles/make_flax_fixtures.py) converts back to the golden tensors bit for bit and
// reproduces the golden model's logits; the same weights under the combiner/tf variable names
// (built here, with the TF attention biases at zero and the head tied to the embedding table)
// map onto the same tensors and reproduce last_hidden_state. Errors name the tensor.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "convert.h"
#include "convert_golden_util.h"
#include "longrun/models/model.h"
#include "longrun/safetensors.h"
#include "readers.h"

using namespace longrun;
using namespace longrun::convert;
using namespace longrun::convert_tests;
namespace fs = std::filesystem;

namespace {

constexpr const char* kGolden = "combiner_axial_causal";

std::string flax_fixture() { return std::string(LONGRUN_GOLDEN_DIR) + "/flax/combiner_axial_causal.msgpack"; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string golden_config(const char* golden = kGolden) {
  auto g = SafetensorsFile::open(golden_model_path(golden));
  REQUIRE(g.ok());
  return (*g)->metadata().at("longrun.config");
}

Result<ConvertSummary> convert_combiner(const SourceCheckpoint& src, const std::string& out,
                                        const std::vector<std::string>& sets = {},
                                        const char* golden = kGolden) {
  LR_ASSIGN_OR_RETURN(std::string config, merge_config(golden_config(golden), sets));
  ConvertOptions o;
  o.arch = "combiner";
  o.config_json = config;
  o.source_label = "test";
  return convert_checkpoint(src, o, out);
}

// The golden weights under the combiner/tf names (docs/models.md#combiner-parameters): layer_<lll>/..., gamma
// / beta, weight; zero biases where TF has them and the JAX model does not; no head kernel.
struct TfCheckpoint {
  std::vector<std::vector<std::byte>> buffers;
  std::vector<SafetensorsWriteEntry> entries;

  void add(const std::string& name, std::span<const int64_t> dims, std::span<const std::byte> bytes) {
    buffers.emplace_back(bytes.begin(), bytes.end());
    entries.push_back({name, TensorDesc::make(DType::f32, dims).value(), buffers.back()});
  }
  void zeros(const std::string& name, std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    buffers.emplace_back(size_t(n) * 4);
    entries.push_back({name, TensorDesc::make(DType::f32, dims).value(), buffers.back()});
  }
};

// proj: the axial row_summary 'proj' layout (W1, LN', W2, output DenseGeneral_2); else the
// output projection is DenseGeneral_0 and there is no rowmajor_param_post.
std::string tf_name(const std::string& flax, bool proj) {
  if (!proj && flax.find("_SelfAttAxialRowmajor_0/DenseGeneral_0/") != std::string::npos)
    return tf_name(std::string(flax).replace(flax.find("DenseGeneral_0"), 14, "DenseGeneral_2"), true);
  static const std::pair<const char*, const char*> kModules[] = {
      {"LayerNorm_0", "attn/pre_norm"},
      {"_SelfAttAxialRowmajor_0/query", "attn/q"},
      {"_SelfAttAxialRowmajor_0/key", "attn/k"},
      {"_SelfAttAxialRowmajor_0/value", "attn/v"},
      {"_SelfAttAxialRowmajor_0/DenseGeneral_0", "attn/rowmajor_param_post/dense"},
      {"_SelfAttAxialRowmajor_0/LayerNorm_0", "attn/rowmajor_param_post/pre_norm"},
      {"_SelfAttAxialRowmajor_0/DenseGeneral_1", "attn/rowmajor_param_post/dense_1"},
      {"_SelfAttAxialRowmajor_0/DenseGeneral_2", "attn/dense"},
      {"LayerNorm_1", "ffn/pre_norm"},
      {"MlpBlock_0/Dense_0", "ffn/dense"},
      {"MlpBlock_0/Dense_1", "ffn/dense_1"}};
  if (flax == "Embed_0/embedding") return "word_embeddings/weights";
  if (flax == "autoreg_model/Dense_0/bias") return "softmax_bias";
  const size_t slash = flax.rfind('/');
  std::string module = flax.substr(0, slash), leaf = flax.substr(slash + 1);
  leaf = leaf == "scale" ? "gamma" : leaf == "kernel" ? "weight" : leaf;
  if (module == "autoreg_model/LayerNorm_0") return "final_norm/" + (leaf == "bias" ? "beta" : leaf);
  const std::string layer = module.substr(32, module.find('/', 32) - 32);  // after transformer_layer_
  module = module.substr(module.find('/', 32) + 1);
  const bool norm = leaf == "gamma" || (module.find("LayerNorm") != std::string::npos && leaf == "bias");
  for (const auto& [from, to] : kModules)
    if (module == from)
      return "layer_" + std::string(3 - layer.size(), '0') + layer + "/" + to + "/" +
             (norm && leaf == "bias" ? "beta" : leaf);
  FAIL("no TF name for " << flax);
  return {};
}

TfCheckpoint tf_checkpoint(const SafetensorsFile& golden) {
  const auto cfg = nlohmann::json::parse(golden.metadata().at("longrun.config"));
  const bool proj = cfg.value("row_summary", std::string("proj")) == "proj";
  TfCheckpoint tf;
  for (const SafetensorsEntry& e : golden.tensors()) {
    if (e.name == "autoreg_model/Dense_0/kernel") continue;  // TF ties the head to word_embeddings^T
    tf.add(tf_name(e.name, proj), e.desc.dims(), e.bytes);
  }
  const int64_t d = cfg["emb_dim"], h = cfg["num_heads"], hd = cfg["qkv_dim"].get<int64_t>() / h;
  for (int l = 0; l < cfg["num_layers"].get<int>(); ++l) {
    const std::string p = "layer_00" + std::to_string(l) + "/attn/";
    for (const char* k : {"q", "k", "v"}) tf.zeros(p + k + "/bias", {h, hd});
    tf.zeros(p + "dense/bias", {d});
    if (!proj) continue;
    tf.zeros(p + "rowmajor_param_post/dense_1/bias", {h, hd});
    tf.zeros(p + "rowmajor_param_post/dense/bias", {d});
  }
  return tf;
}

// A TF conversion ties the head to the embedding (transposed), so everything before the
// head must be the golden model's: last_hidden_state on the golden's n37 inputs, bitwise.
void check_same_body(const std::string& converted, const std::string& golden_name) {
  auto model = Model::load(converted);
  auto golden = Model::load(golden_model_path(golden_name));
  REQUIRE_MESSAGE(model.ok(), model.status().to_string());
  REQUIRE(golden.ok());
  const auto inputs = golden_inputs(golden_name + ".n37");
  CHECK(run_once(**model, inputs, "last_hidden_state") == run_once(**golden, inputs, "last_hidden_state"));
}

}  // namespace

TEST_CASE("convert combiner: the Flax optimizer checkpoint gives the golden tensors and logits") {
  auto src = read_checkpoint(flax_fixture(), "flax", {});
  REQUIRE_MESSAGE(src.ok(), src.status().to_string());
  CHECK(src->format == "flax-msgpack");
  CHECK(std::find(src->notes.begin(), src->notes.end(), "state/step = 1200") != src->notes.end());
  const std::string out = temp_out("combiner_flax.safetensors");
  auto summary = convert_combiner(*src, out);
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(summary->layout == "flax-combiner");
  CHECK(summary->mapped == 37);
  CHECK(summary->ignored.size() == 2);  // the Adam moments under state/param_states
  CHECK(summary->retied.empty());
  check_golden_tensors(out, kGolden);
  auto model = Model::load(out);
  auto golden = Model::load(golden_model_path(kGolden));
  REQUIRE_MESSAGE(model.ok(), model.status().to_string());
  REQUIRE(golden.ok());
  CHECK((*model)->config_json() == (*golden)->config_json());
  const auto inputs = golden_inputs("combiner_axial_causal.n37");
  // The head is tied in TF (the embedding transposed), so compare what comes before it.
  CHECK(run_once(**model, inputs, "last_hidden_state") == run_once(**golden, inputs, "last_hidden_state"));
  fs::remove(out);
}

TEST_CASE("convert combiner: Flax errors name the tensor, expected and found; nothing is written") {
  auto src = read_checkpoint(flax_fixture(), "auto", {});  // sniffed as msgpack
  REQUIRE_MESSAGE(src.ok(), src.status().to_string());
  const std::string out = temp_out("combiner_bad.safetensors");
  SUBCASE("a config that implies other shapes") {
    auto r = convert_combiner(*src, out, {"mlp_dim=48"});
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(),
                   "tensor 'target/autoreg_model/transformer_layer_0/MlpBlock_0/Dense_0/kernel': "
                   "expected shape [64, 48], found [64, 32]"));
  }
  SUBCASE("a missing and an unknown tensor") {
    for (SourceTensor& t : src->tensors)
      if (t.name == "target/autoreg_model/LayerNorm_0/scale")
        t.name = "target/autoreg_model/LayerNorm_9/scale";
    auto r = convert_combiner(*src, out);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(), "layout flax-combiner"));
    CHECK(contains(r.status().message(), "unexpected tensor 'target/autoreg_model/LayerNorm_9/scale' [64]"));
    CHECK(contains(r.status().message(), "missing tensor 'autoreg_model/LayerNorm_0/scale' [64]"));
  }
  SUBCASE("--from flax refuses other formats") {
    auto r = read_checkpoint(golden_model_path(kGolden), "flax", {});
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(),
                   "at byte 0: expected a map at the top level (a Flax state dict), found int"));
  }
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("convert combiner: TF row_summary 'none' puts attn/dense on DenseGeneral_0 (no W1 / W2)") {
  const char* name = "combiner_axial_causal_none";
  auto golden_file = SafetensorsFile::open(golden_model_path(name));
  REQUIRE(golden_file.ok());
  TfCheckpoint tf = tf_checkpoint(**golden_file);
  const std::string in = temp_out("combiner_tf_none_in.safetensors"),
                    out = temp_out("combiner_tf_none.safetensors");
  REQUIRE(write_safetensors(in, tf.entries, {{"format", "pt"}}).ok());
  auto src = read_checkpoint(in, "auto", {});
  REQUIRE_MESSAGE(src.ok(), src.status().to_string());
  auto summary = convert_combiner(*src, out, {}, name);
  REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
  CHECK(summary->ignored.size() == 8);  // 4 zero biases per layer
  check_same_body(out, name);
  fs::remove(in);
  fs::remove(out);
}

TEST_CASE("convert combiner: TF variable names map onto the same model (tied head, zero biases)") {
  auto golden_file = SafetensorsFile::open(golden_model_path(kGolden));
  REQUIRE(golden_file.ok());
  TfCheckpoint tf = tf_checkpoint(**golden_file);
  const std::string in = temp_out("combiner_tf_in.safetensors"), out = temp_out("combiner_tf.safetensors");
  SUBCASE("round trip") {
    const Status written = write_safetensors(in, tf.entries, {{"format", "pt"}});
    REQUIRE_MESSAGE(written.ok(), written.to_string());
    auto src = read_checkpoint(in, "auto", {});
    REQUIRE_MESSAGE(src.ok(), src.status().to_string());
    auto summary = convert_combiner(*src, out);  // no --layout: flax-combiner does not fit, tf-combiner does
    REQUIRE_MESSAGE(summary.ok(), summary.status().to_string());
    CHECK(summary->layout == "tf-combiner");
    CHECK(summary->ignored.size() == 12);  // 6 zero biases per layer
    REQUIRE(summary->retied.size() == 1);
    CHECK(summary->retied[0] == "autoreg_model/Dense_0/kernel <- Embed_0/embedding (transposed)");
    auto conv = SafetensorsFile::open(out);
    REQUIRE(conv.ok());
    CHECK((*conv)->tensors().size() == (*golden_file)->tensors().size());
    for (const SafetensorsEntry& g : (*golden_file)->tensors()) {
      const SafetensorsEntry* c = (*conv)->find(g.name);
      REQUIRE_MESSAGE(c, g.name);
      CHECK(c->desc.to_string() == g.desc.to_string());
      if (g.name != "autoreg_model/Dense_0/kernel")
        CHECK_MESSAGE(std::memcmp(c->bytes.data(), g.bytes.data(), g.bytes.size()) == 0, g.name);
    }
    // The head kernel [D, V] is the embedding table [V, D] transposed.
    const SafetensorsEntry* head = (*conv)->find("autoreg_model/Dense_0/kernel");
    const SafetensorsEntry* emb = (*conv)->find("Embed_0/embedding");
    REQUIRE((head && emb));
    const int64_t v = emb->desc.dims()[0], d = emb->desc.dims()[1];
    const auto* hp = reinterpret_cast<const float*>(head->bytes.data());
    const auto* ep = reinterpret_cast<const float*>(emb->bytes.data());
    bool transposed = true;
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < v; ++j) transposed = transposed && hp[i * v + j] == ep[j * d + i];
    CHECK(transposed);
    check_same_body(out, kGolden);
  }
  SUBCASE("a non-zero TF bias and a learned position table are refused by name") {
    for (size_t i = 0; i < tf.entries.size(); ++i)
      if (tf.entries[i].name == "layer_001/attn/k/bias")
        tf.buffers[i][7] = std::byte{0x3f};  // element 1 = 0.5
    tf.zeros("pos_embeddings/weights", {160, 64});
    REQUIRE(write_safetensors(in, tf.entries, {{"format", "pt"}}).ok());
    auto src = read_checkpoint(in, "auto", {});
    REQUIRE(src.ok());
    ConvertOptions o;
    o.arch = "combiner";
    o.layout = "tf-combiner";
    o.config_json = golden_config();
    auto r = convert_checkpoint(*src, o, out);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.status().message(),
                   "safetensors checkpoint '" + in + "' to 'combiner' (layout tf-combiner): 2 problem(s)"));
    CHECK(contains(r.status().message(), "tensor 'layer_001/attn/k/bias': TF attention bias"));
    CHECK(contains(r.status().message(), "found non-zero values"));
    CHECK(contains(r.status().message(), "tensor 'pos_embeddings/weights': a learned position table"));
    CHECK_FALSE(fs::exists(out));
  }
  fs::remove(in);
  fs::remove(out);
}
