// arch "lasformer" (docs/models.md#lasformer): config errors name the field, the selection parameters sit
// at the lowest layer of every group, the graph attends through sparse_attention over
// k = 5 % of the keys (no dense attention op) chosen by matmul_topk (no [N, N] scores, an
// O(N k) arena at 16k). Generation is checked by the .gen goldens (generation_test.cpp). A
// padded row run alone gives its row of the batch's golden.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "longrun/graph.h"
#include "longrun/planner.h"
#include "longrun/safetensors.h"
#include "models/check_status.h"
#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

constexpr const char* kTiny =
    "/lasformer_r2_tiny.safetensors";  // 2 + 2 layers, r 2, ds 32, rho 0.05, k_min 10

TEST_CASE("lasformer: config errors name the field") {
  EditableFile f = EditableFile::read(golden_dir() + kTiny);
  auto with = [&](const std::string& from, const std::string& to) {
    return f.load_with_config_edit(from, to);
  };
  CHECK_STATUS(with("\"selection_ratio\":0.05", "\"selection_ratio\":0.0"), StatusCode::format_error,
               "'selection_ratio'", "(0, 1]");
  CHECK_STATUS(with("\"selection_ratio\":0.05", "\"selection_ratio\":1.5"), StatusCode::format_error,
               "'selection_ratio'");
  CHECK_STATUS(with("\"selection_group_size\":2", "\"selection_group_size\":0"), StatusCode::format_error,
               "'selection_group_size'");
  CHECK_STATUS(with("\"selection_min_keys\":10", "\"selection_min_keys\":0"), StatusCode::format_error,
               "'selection_min_keys'");
  CHECK_STATUS(with("\"selection_dim\":32", "\"selection_dim\":\"32\""), StatusCode::format_error,
               "'selection_dim'");
  CHECK_STATUS(with("\"selection_dim\":32", "\"selection_dim\":32,\"selection_bias\":1"),
               StatusCode::format_error, "'selection_bias'");
  CHECK_STATUS(with("\"selection_dim\":32", "\"selection_dim\":32,\"selection_k\":5"),
               StatusCode::format_error, "unknown field 'selection_k'");
  // The transformer fields keep their checks, under the lasformer name.
  CHECK_STATUS(with("\"selection_dim\":32", "\"selection_dim\":32,\"activation_fn\":\"swish\""),
               StatusCode::unsupported, "lasformer config", "swish");
  // The table follows the fields: r 1 puts selection weights at layer 1 too; biases are extra.
  CHECK_STATUS(with("\"selection_group_size\":2", "\"selection_group_size\":1"), StatusCode::format_error,
               "missing tensor 'encoder.layers.1.self_attn.select_q.weight'");
  CHECK_STATUS(with("\"selection_dim\":32", "\"selection_dim\":32,\"selection_bias\":true"),
               StatusCode::format_error, "select_q.bias");
  CHECK_STATUS(with("\"selection_dim\":32", "\"selection_dim\":16"), StatusCode::format_error,
               "select_q.weight");
}

TEST_CASE("lasformer: parameter table") {
  auto params = model_parameters(
      "lasformer", R"({"src_vocab_size":50,"tgt_vocab_size":50,"encoder_embed_dim":64,)"
                   R"("encoder_ffn_embed_dim":128,"decoder_ffn_embed_dim":128,"encoder_layers":6,)"
                   R"("decoder_layers":6,"encoder_attention_heads":8,"decoder_attention_heads":8})");
  REQUIRE_MESSAGE(params.ok(), params.status().to_string());
  std::vector<std::string> selection;
  for (const ModelParameter& p : *params)
    if (p.name.find(".select_") != std::string::npos) {
      selection.push_back(p.name);
      CHECK(p.dims == std::vector<int64_t>{64, 64});  // ds 64 (default) x D
    }
  // Defaults r = 3: groups start at layers 0 and 3; no biases.
  CHECK(selection ==
        std::vector<std::string>{
            "encoder.layers.0.self_attn.select_q.weight", "encoder.layers.0.self_attn.select_k.weight",
            "encoder.layers.3.self_attn.select_q.weight", "encoder.layers.3.self_attn.select_k.weight",
            "decoder.layers.0.self_attn.select_q.weight", "decoder.layers.0.self_attn.select_k.weight",
            "decoder.layers.0.encoder_attn.select_q.weight", "decoder.layers.0.encoder_attn.select_k.weight",
            "decoder.layers.3.self_attn.select_q.weight", "decoder.layers.3.self_attn.select_k.weight",
            "decoder.layers.3.encoder_attn.select_q.weight",
            "decoder.layers.3.encoder_attn.select_k.weight"});
}

TEST_CASE("lasformer: attention runs over the selected keys only") {
  auto m = Model::load(golden_dir() + kTiny);
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  const std::vector<std::string> names = {"input_ids", "decoder_input_ids"};
  const std::vector<TensorDesc> descs = {TensorDesc(DType::i64, {1, 200}), TensorDesc(DType::i64, {1, 20})};
  auto g = (*m)->build_graph(names, descs);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  int sparse = 0, topk = 0;
  for (const auto& node : g->nodes()) {
    CHECK(node.kind != OpKind::attention);
    CHECK(node.kind != OpKind::topk_indices);  // no dense score rows to select from
    if (node.kind == OpKind::sparse_attention) ++sparse;
    if (node.kind == OpKind::matmul_topk) {
      ++topk;
      // k(200) = max(ceil(0.05 * 200), 10) = 10 in the encoder and cross-attention, and
      // min(20, 10) = 10 in the decoder: 5 % of the 200 source keys.
      CHECK(std::get<MatmulTopkAttrs>(node.attrs).k == 10);
    }
  }
  CHECK(sparse == 2 + 2 * 2);  // every attention of 2 + 2 layers
  CHECK(topk == 3);            // one group per stack: encoder self, decoder self, cross
}

// The selection's memory is O(N k): at N = 16,384 no value of the graph holds N^2 / 16
// elements and the planned arena stays under a quarter of one dense [N, N] f32 score matrix
// (the dense selection needed at least one such matrix in the arena). Planned, not run.
TEST_CASE("lasformer: no [N, N] value and an O(N k) arena at N = 16384") {
  constexpr int64_t kN = 16384;
  const std::string config =
      R"({"src_vocab_size":50,"tgt_vocab_size":50,"encoder_embed_dim":32,"encoder_ffn_embed_dim":64,)"
      R"("encoder_layers":2,"encoder_attention_heads":2,"decoder_layers":1,"decoder_attention_heads":2,)"
      R"("decoder_ffn_embed_dim":64,"max_source_positions":16384,"max_target_positions":16,)"
      R"("selection_dim":16,"selection_group_size":2})";
  auto table = model_parameters("lasformer", config);
  REQUIRE_MESSAGE(table.ok(), table.status().to_string());
  std::vector<std::vector<std::byte>> data;
  std::vector<SafetensorsWriteEntry> entries;
  for (const ModelParameter& p : *table) {
    const TensorDesc d(DType::f32, p.dims);
    data.emplace_back(size_t(d.nbytes()));
    entries.push_back({p.name, d, data.back()});
  }
  auto bytes = serialize_safetensors(
      entries, {{"longrun.format", "1"}, {"longrun.arch", "lasformer"}, {"longrun.config", config}});
  REQUIRE_MESSAGE(bytes.ok(), bytes.status().to_string());
  auto owner = std::make_shared<std::vector<std::byte>>(std::move(bytes).value());
  auto file = SafetensorsFile::parse(*owner, owner, "lasformer-16k");
  REQUIRE_MESSAGE(file.ok(), file.status().to_string());
  auto m = Model::from_file(*file);
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  const std::vector<std::string> names = {"input_ids", "decoder_input_ids"};
  const std::vector<TensorDesc> descs = {TensorDesc(DType::i64, {1, kN}), TensorDesc(DType::i64, {1, 8})};
  auto g = (*m)->build_graph(names, descs);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  for (const auto& v : g->values()) {
    const std::string what = v.name + " has " + std::to_string(v.desc.numel()) + " elements";
    CHECK_MESSAGE(v.desc.numel() < kN * kN / 16, what);
  }
  auto plan = plan_memory(*g);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  MESSAGE("planned arena at N = 16384: " << plan->report.arena_bytes / (1 << 20) << " MiB");
  CHECK(plan->report.arena_bytes < kN * kN * int64_t(sizeof(float)) / 4);
}

TEST_CASE("lasformer: each padded row run alone (key mask as the score GEMM's bias) equals its batch row") {
  auto io = SafetensorsFile::open(golden_dir() + "/lasformer_r2_tiny.n37_t12_pad.io.safetensors");
  REQUIRE_MESSAGE(io.ok(), io.status().to_string());
  auto m = Model::load(golden_dir() + kTiny);
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  // Row r of a [2, ...] entry as a [1, ...] tensor.
  auto row = [](const SafetensorsEntry& e, int64_t r) {
    std::vector<int64_t> dims(e.desc.dims().begin(), e.desc.dims().end());
    REQUIRE(dims[0] == 2);
    dims[0] = 1;
    const TensorDesc d(e.desc.dtype(), dims);
    const size_t bytes = e.bytes.size() / 2;
    auto t = Tensor::from_bytes(d, e.bytes.subspan(size_t(r) * bytes, bytes));
    REQUIRE(t.ok());
    return t.value();
  };
  int padded_rows = 0;
  for (int64_t r = 0; r < 2; ++r) {
    CAPTURE(r);
    std::vector<NamedTensor> inputs;
    for (const SafetensorsEntry& e : (*io)->tensors())
      if (e.name.starts_with("input/")) inputs.push_back({e.name.substr(6), row(e, r)});
    for (const NamedTensor& in : inputs)
      if (in.name == "input_ids")
        for (int64_t i = 0; i < in.tensor.numel(); ++i)
          padded_rows += (in.tensor.desc().dtype() == DType::i64 ? in.tensor.data<int64_t>()[i]
                                                                 : in.tensor.data<int32_t>()[i]) == 1;
    auto out = run_model(**m, inputs);
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    for (const SafetensorsEntry& e : (*io)->tensors()) {
      if (!e.name.starts_with("expected/") || e.name.starts_with("expected/debug.")) continue;
      const std::string name = e.name.substr(9);
      CAPTURE(name);
      const Tensor want = row(e, r);
      REQUIRE(out->count(name) == 1);
      const Error err = measure({out->at(name).data<float>(), size_t(want.numel())},
                                {want.data<float>(), size_t(want.numel())});
      CHECK(err.norm_err <= golden::kMaxNormErr);
      CHECK(err.max_abs <= golden::kMaxAbsErr);
    }
  }
  CHECK(padded_rows > 0);  // the case really pads (fairseq pad id 1)
}

}  // namespace
}  // namespace longrun::model_tests
