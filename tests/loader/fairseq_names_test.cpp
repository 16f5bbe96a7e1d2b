// fairseq name mapper: the upgrade rules on an old-format transformer state dict (fused
// in_proj, layer_norms.N, embed_out, sinusoidal caches), a current BART state dict (only
// buffers dropped), shape checks, target collisions, the pattern matcher and split_rows.
#include "checkpoint/fairseq/fairseq_names.h"

#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <vector>

using namespace longrun;
using namespace longrun::checkpoint::fairseq;

namespace {

using Kind = PlanEntry::Kind;
using Shape = std::vector<int64_t>;

std::map<std::string, const PlanEntry*> by_source(const std::vector<PlanEntry>& plan) {
  std::map<std::string, const PlanEntry*> m;
  for (const PlanEntry& e : plan) m[e.source] = &e;
  return m;
}

}  // namespace

TEST_CASE("fairseq names: pattern matcher") {
  CHECK(match_pattern("**.in_proj_weight", "encoder.layers.3.self_attn.in_proj_weight") ==
        std::vector<std::string>{"encoder.layers.3.self_attn"});
  CHECK(match_pattern("encoder.layers.*.layer_norms.0.*", "encoder.layers.11.layer_norms.0.bias") ==
        std::vector<std::string>{"11", "bias"});
  CHECK_FALSE(match_pattern("**.in_proj_weight", "in_proj_weight").has_value());  // ** needs a segment
  CHECK_FALSE(match_pattern("encoder.layers.*.fc1", "encoder.layers.1.2.fc1").has_value());
  CHECK_FALSE(match_pattern("**.embed_positions.weights", "encoder.embed_positions.weight").has_value());
  CHECK(match_pattern("a.b", "a.b") == std::vector<std::string>{});
}

TEST_CASE("fairseq names: an old-format transformer is upgraded to current names") {
  const int64_t D = 4, F = 8, V = 10;
  const std::vector<SourceParam> sd = {
      {"encoder.version", {1}},
      {"encoder.embed_tokens.weight", {V, D}},
      {"encoder.embed_positions._float_tensor", {1}},
      {"encoder.embed_positions.weights", {1026, D}},
      {"encoder.layers.0.self_attn.in_proj_weight", {3 * D, D}},
      {"encoder.layers.0.self_attn.in_proj_bias", {3 * D}},
      {"encoder.layers.0.self_attn.out_proj.weight", {D, D}},
      {"encoder.layers.0.layer_norms.0.weight", {D}},
      {"encoder.layers.0.layer_norms.1.bias", {D}},
      {"encoder.layers.0.fc1.weight", {F, D}},
      {"decoder.layers.0.encoder_attn.in_proj_weight", {3 * D, D}},
      {"decoder.layers.0.layer_norms.0.weight", {D}},
      {"decoder.layers.0.layer_norms.1.weight", {D}},
      {"decoder.layers.0.layer_norms.2.weight", {D}},
      {"decoder.embed_out", {V, D}},
      {"decoder.version", {1}},
  };
  const auto plan = plan_state_dict(sd);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  REQUIRE(plan->size() == sd.size());
  for (size_t i = 0; i < sd.size(); ++i) CHECK((*plan)[i].source == sd[i].name);  // source order kept
  const auto m = by_source(*plan);
  const auto expect = [&](const std::string& src, Kind kind, std::vector<std::string> targets,
                          std::vector<Shape> shapes = {}) {
    CAPTURE(src);
    const PlanEntry& e = *m.at(src);
    CHECK(e.kind == kind);
    CHECK(e.targets == targets);
    if (!shapes.empty()) CHECK(e.target_shapes == shapes);
    if (kind == Kind::drop) CHECK_FALSE(e.reason.empty());
  };
  expect("encoder.version", Kind::drop, {});
  expect("decoder.version", Kind::drop, {});
  expect("encoder.embed_positions._float_tensor", Kind::drop, {});
  expect("encoder.embed_positions.weights", Kind::drop, {});
  expect("encoder.embed_tokens.weight", Kind::keep, {"encoder.embed_tokens.weight"}, {{V, D}});
  expect("encoder.layers.0.self_attn.in_proj_weight", Kind::split_qkv,
         {"encoder.layers.0.self_attn.q_proj.weight", "encoder.layers.0.self_attn.k_proj.weight",
          "encoder.layers.0.self_attn.v_proj.weight"},
         {{D, D}, {D, D}, {D, D}});
  expect("encoder.layers.0.self_attn.in_proj_bias", Kind::split_qkv,
         {"encoder.layers.0.self_attn.q_proj.bias", "encoder.layers.0.self_attn.k_proj.bias",
          "encoder.layers.0.self_attn.v_proj.bias"},
         {{D}, {D}, {D}});
  expect("encoder.layers.0.layer_norms.0.weight", Kind::rename,
         {"encoder.layers.0.self_attn_layer_norm.weight"});
  expect("encoder.layers.0.layer_norms.1.bias", Kind::rename, {"encoder.layers.0.final_layer_norm.bias"});
  expect("encoder.layers.0.fc1.weight", Kind::keep, {"encoder.layers.0.fc1.weight"});
  expect("decoder.layers.0.encoder_attn.in_proj_weight", Kind::split_qkv,
         {"decoder.layers.0.encoder_attn.q_proj.weight", "decoder.layers.0.encoder_attn.k_proj.weight",
          "decoder.layers.0.encoder_attn.v_proj.weight"});
  expect("decoder.layers.0.layer_norms.0.weight", Kind::rename,
         {"decoder.layers.0.self_attn_layer_norm.weight"});
  expect("decoder.layers.0.layer_norms.1.weight", Kind::rename,
         {"decoder.layers.0.encoder_attn_layer_norm.weight"});
  expect("decoder.layers.0.layer_norms.2.weight", Kind::rename, {"decoder.layers.0.final_layer_norm.weight"});
  expect("decoder.embed_out", Kind::rename, {"decoder.output_projection.weight"}, {{V, D}});
}

TEST_CASE("fairseq names: a current BART state dict only loses its buffers") {
  const std::vector<SourceParam> sd = {
      {"encoder.embed_tokens.weight", {10, 4}},
      {"encoder.embed_positions.weight", {1026, 4}},
      {"encoder.layernorm_embedding.weight", {4}},
      {"encoder.layers.0.self_attn.q_proj.weight", {4, 4}},
      {"encoder.layers.0.self_attn.k_proj.bias", {4}},
      {"encoder.layers.0.final_layer_norm.weight", {4}},
      {"decoder.output_projection.weight", {10, 4}},
      {"encoder.version", {1}},
      {"decoder.version", {1}},
  };
  const auto plan = plan_state_dict(sd);
  REQUIRE(plan.ok());
  size_t kept = 0, dropped = 0;
  for (const PlanEntry& e : *plan) {
    if (e.kind == Kind::keep) {
      ++kept;
      CHECK(e.targets == std::vector<std::string>{e.source});
    } else {
      CHECK(e.kind == Kind::drop);
      ++dropped;
    }
  }
  CHECK(kept == 7);
  CHECK(dropped == 2);
}

TEST_CASE("fairseq names: bad fused shapes and colliding targets are refused") {
  const auto refuse = [](std::vector<SourceParam> sd, const char* needle) {
    const auto r = plan_state_dict(sd);
    REQUIRE_FALSE(r.ok());
    CAPTURE(r.status().message());
    CHECK(r.status().code() == StatusCode::invalid_argument);
    CHECK(r.status().message().find(needle) != std::string::npos);
  };
  refuse({{"encoder.layers.0.self_attn.in_proj_weight", {13, 4}}},
         "fairseq tensor 'encoder.layers.0.self_attn.in_proj_weight': a fused q/k/v projection must be [3*D, "
         "D] or "
         "[3*D], found [13, 4]");
  refuse({{"a.in_proj_weight", {12, 5}}}, "found [12, 5]");
  refuse({{"a.in_proj_weight", {12, 4, 1}}}, "found [12, 4, 1]");
  refuse({{"a.in_proj_bias", {0}}}, "found [0]");
  refuse(
      {{"encoder.layers.0.layer_norms.0.weight", {4}}, {"encoder.layers.0.self_attn_layer_norm.weight", {4}}},
      "tensors 'encoder.layers.0.layer_norms.0.weight' and 'encoder.layers.0.self_attn_layer_norm.weight' "
      "both "
      "map to 'encoder.layers.0.self_attn_layer_norm.weight'");
  refuse({{"x.in_proj_bias", {6}}, {"x.q_proj.bias", {2}}}, "both map to 'x.q_proj.bias'");
}

TEST_CASE("fairseq names: extra rules extend the table (a Lasformer-style module)") {
  std::vector<NameRule> rules(transformer_rules().begin(), transformer_rules().end());
  rules.push_back(
      {"encoder.layers.*.las.proj", RuleAction::rename, {"encoder.layers.$1.las_proj.weight"}, ""});
  const auto plan = plan_state_dict(std::vector<SourceParam>{{"encoder.layers.2.las.proj", {4, 4}}}, rules);
  REQUIRE(plan.ok());
  CHECK((*plan)[0].targets == std::vector<std::string>{"encoder.layers.2.las_proj.weight"});
}

TEST_CASE("fairseq names: split_rows cuts q, k, v row blocks without copying") {
  std::vector<float> w(12 * 4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i);
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(w.data()), w.size() * 4);
  const Shape shape{12, 4};
  const auto parts = split_rows(bytes, shape, 4, 3, "in_proj_weight");
  REQUIRE(parts.ok());
  REQUIRE(parts->size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    CHECK((*parts)[k].size() == 16 * 4);
    CHECK((*parts)[k].data() == bytes.data() + k * 64);
    float first;
    std::memcpy(&first, (*parts)[k].data(), 4);
    CHECK(first == float(16 * k));  // row 4k starts block k
  }
  const auto bad = split_rows(bytes, Shape{13, 4}, 4, 3, "w");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("cannot split shape [13, 4] into 3 equal row blocks") !=
        std::string::npos);
  const auto short_bytes = split_rows(bytes.first(100), shape, 4, 3, "w");
  REQUIRE_FALSE(short_bytes.ok());
  CHECK(short_bytes.status().message().find("needs 192 bytes, found 100") != std::string::npos);
}
