// Generation with the causal combiner LM (models/lm/causal_lm_generate.h): greedy sequences
// of every causal form equal an independent full-recompute oracle written here (argmax of the
// forward graph's last logits on the growing sequence, pad banned, eos banned below
// min_length, eos forced last); the cached steps of every causal form give the full forward's
// logits;
// beam scores equal the hypotheses re-scored by one forward pass; and the errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "longrun/models/generate.h"
#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

constexpr int64_t kPad = 0, kEos = 1;

// logits f32 [1, L, V] of the forward graph on `ids`.
std::vector<float> forward_logits(const Model& m, const std::vector<int64_t>& ids, int64_t* vocab) {
  const int64_t n = int64_t(ids.size());
  auto r =
      run_model(m, {{"input_ids", ids_tensor(1, n, [&](int64_t, int64_t i) { return ids[size_t(i)]; })}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  const Tensor& t = r->at("logits");
  *vocab = t.desc().dim(2);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.nbytes() / int64_t(sizeof(float)));
}

// Greedy by full recomputation: the generated tokens (eos included).
std::vector<int64_t> oracle_greedy(const Model& m, std::vector<int64_t> ids, int64_t steps,
                                   int64_t min_length) {
  std::vector<int64_t> out;
  for (int64_t s = 0; s < steps; ++s) {
    int64_t v = 0;
    const std::vector<float> l = forward_logits(m, ids, &v);
    const float* last = l.data() + (int64_t(ids.size()) - 1) * v;
    int64_t best = -1;
    for (int64_t j = 0; j < v; ++j) {
      if (j == kPad || (j == kEos && s < min_length) || (s == steps - 1 && j != kEos)) continue;
      if (best < 0 || last[j] > last[best]) best = j;
    }
    out.push_back(best);
    ids.push_back(best);
    if (best == kEos) break;
  }
  return out;
}

// Sum of log_softmax(logits)[next token] over the generated tokens, by one forward pass.
double rescore(const Model& m, std::vector<int64_t> ids, const std::vector<int64_t>& gen) {
  const size_t n = ids.size();
  ids.insert(ids.end(), gen.begin(), gen.end() - 1);
  int64_t v = 0;
  const std::vector<float> l = forward_logits(m, ids, &v);
  double sum = 0.0;
  for (size_t s = 0; s < gen.size(); ++s) {
    const float* row = l.data() + int64_t(n - 1 + s) * v;
    double mx = -std::numeric_limits<double>::infinity(), z = 0.0;
    for (int64_t j = 0; j < v; ++j) mx = std::max(mx, double(row[j]));
    for (int64_t j = 0; j < v; ++j) z += std::exp(double(row[j]) - mx);
    sum += double(row[gen[s]]) - mx - std::log(z);
  }
  return sum;
}

const char* const kCausal[] = {"combiner_fixed_causal",      "combiner_axial_causal",
                               "combiner_axial_causal_wsum", "combiner_axial_causal_none",
                               "combiner_mixture_causal",    "combiner_logsparse_causal"};

TEST_CASE("combiner generation: greedy equals full recomputation over 36 steps, every causal form") {
  // Prompt of 5 tokens + 36 steps: crosses segment boundaries 8..40 (s = 8) / 16, 32 (s = 16).
  // Sequences are compared exactly (token ids).
  const std::vector<int64_t> prompt = {7, 3, 22, 9, 14};
  for (const char* name : kCausal) {
    CAPTURE(name);
    auto m = Model::load(golden_dir() + "/" + name + ".safetensors");
    REQUIRE(m.ok());
    const Tensor ids = ids_tensor(1, 5, [&](int64_t, int64_t i) { return prompt[size_t(i)]; });
    GenerateOptions o{.max_new_tokens = 36, .min_length = 35};
    auto r = generate(*m, session_options(), ids.view(), nullptr, o);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    REQUIRE(r->sequences.size() == 1);
    const std::vector<int64_t> want = oracle_greedy(**m, prompt, 36, 35);
    CHECK(want.size() == 36);
    CHECK(r->sequences[0][0] == want);
    CHECK(r->steps == 36);
  }
}

TEST_CASE("combiner generation: cached step logits equal the full forward on the growing sequence") {
  // fixed (s = 16), axial and mixture (s = 8): prompt 5 + 40 steps crosses 2 / 5 segment
  // boundaries and grows the cache 16 -> 32 -> 48 slots; logsparse (s = 1) ends blocks of every
  // level up to 32 and grows it 16 -> 32 -> 45. Every step's logits (beam 0) against the full graph
  // on prompt + generated[0..t), max |diff| over max |logit| <= 1e-5: the step attends over S
  // masked slots where the full graph attends over s, so sums may run in another order
  // (rounding only; a wrong cache is O(1)).
  const std::vector<int64_t> prompt = {7, 3, 22, 9, 14};
  for (const char* name : kCausal) {
    CAPTURE(name);
    auto m = Model::load(golden_dir() + "/" + name + ".safetensors");
    REQUIRE(m.ok());
    const bool logsparse = std::string(name).find("logsparse") != std::string::npos;
    const Tensor ids = ids_tensor(1, 5, [&](int64_t, int64_t i) { return prompt[size_t(i)]; });
    std::vector<std::vector<float>> steps;
    GenerateOptions o{.max_new_tokens = 40, .min_length = 39};
    o.on_step_logits = [&](int64_t, const Tensor& l) {
      steps.emplace_back(l.data<float>(), l.data<float>() + l.desc().dim(1));
    };
    auto r = generate(*m, session_options(), ids.view(), nullptr, o);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK(r->cache_slots == (logsparse ? 45 : 48));
    CHECK(r->step_shapes == 3);
    REQUIRE(steps.size() == 40);
    std::vector<int64_t> seq = prompt;
    double worst = 0.0;
    for (size_t t = 0; t < steps.size(); ++t) {
      int64_t v = 0;
      const std::vector<float> full = forward_logits(**m, seq, &v);
      const float* want = full.data() + (int64_t(seq.size()) - 1) * v;
      double diff = 0.0, scale = 0.0;
      for (int64_t j = 0; j < v; ++j) {
        diff = std::max(diff, double(std::abs(steps[t][size_t(j)] - want[j])));
        scale = std::max(scale, double(std::abs(want[j])));
      }
      worst = std::max(worst, diff / scale);
      seq.push_back(r->sequences[0][0][t]);
    }
    MESSAGE(std::string(name) << " cached vs full: max normalised logit difference " << worst
                              << " over 40 steps");
    CHECK(worst <= 1e-5);
  }
}

TEST_CASE("combiner generation: beam scores equal the re-scored hypotheses; beam >= greedy") {
  const std::vector<int64_t> prompt = {4, 17, 30, 2, 11, 5};
  for (const char* name : kCausal) {
    CAPTURE(name);
    auto m = Model::load(golden_dir() + "/" + name + ".safetensors");
    REQUIRE(m.ok());
    const Tensor ids = ids_tensor(1, 6, [&](int64_t, int64_t i) { return prompt[size_t(i)]; });
    GenerateOptions o{.max_new_tokens = 30, .min_length = 10, .num_beams = 3, .num_return_sequences = 3};
    auto r = generate(*m, session_options(), ids.view(), nullptr, o);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    REQUIRE(r->sequences[0].size() == 3);
    for (size_t j = 0; j < 3; ++j) {
      const auto& gen = r->sequences[0][j];
      REQUIRE(!gen.empty());
      CHECK(gen.back() == kEos);
      CHECK(std::count(gen.begin(), gen.end(), kPad) == 0);
      const double want = rescore(**m, prompt, gen) / double(gen.size());  // length_penalty 1
      CHECK_MESSAGE(std::abs(r->scores[0][j] - want) <= 1e-5, r->scores[0][j] << " vs " << want);
      if (j > 0) CHECK(r->scores[0][j] <= r->scores[0][j - 1]);
    }
  }
}

TEST_CASE("combiner generation: errors and the max_len cap") {
  auto fixed = Model::load(golden_dir() + "/combiner_fixed_causal.safetensors");  // max_len 320
  REQUIRE(fixed.ok());
  {  // bidirectional: refused at creation
    auto bidir = Model::load(golden_dir() + "/combiner_fixed_bidir.safetensors");
    REQUIRE(bidir.ok());
    auto g = Generator::create(*bidir, session_options());
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == StatusCode::unsupported);
    CHECK(g.status().to_string().find("bidirectional") != std::string::npos);
  }
  auto g = Generator::create(*fixed, session_options());
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  {  // N = 0
    const Tensor ids = ids_tensor(1, 0, [](int64_t, int64_t) { return 0; });
    auto r = (*g)->generate(ids.view(), nullptr, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::invalid_argument);
  }
  {  // a prompt of max_len tokens leaves no room
    const Tensor ids = ids_tensor(1, 320, [](int64_t, int64_t i) { return 2 + i % 30; });
    auto r = (*g)->generate(ids.view(), nullptr, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().to_string().find("max_len 320") != std::string::npos);
  }
  {  // prompt + max_new_tokens > max_len: capped at max_len (the last token is eos)
    const Tensor ids = ids_tensor(1, 317, [](int64_t, int64_t i) { return 2 + i % 30; });
    auto r = (*g)->generate(ids.view(), nullptr, {.max_new_tokens = 10, .min_length = 2});
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK(r->steps == 3);
    REQUIRE(r->sequences[0].size() == 1);
    REQUIRE(r->sequences[0][0].size() == 3);
    CHECK(r->sequences[0][0].back() == kEos);
  }
  {  // attention_mask is not an input of a causal LM
    const Tensor ids = ids_tensor(1, 4, [](int64_t, int64_t i) { return 2 + i; });
    const TensorView v = ids.view();
    auto r = (*g)->generate(v, &v, {});
    CHECK_FALSE(r.ok());
  }
}

}  // namespace
}  // namespace longrun::model_tests
