// Generation (longrun/models/generate.h) against the PyTorch oracle's beam search
// (tests/golden/models/*.gen.safetensors, written by make_model_goldens.py), the KV-cached
// decoder steps against full recomputation, and generation's errors.
//
// Tolerances: token sequences must be identical (the oracle asserts that every decision it
// took is >= 1e-3 away from flipping, while f32 step logits differ from the float64 oracle by
// ~1e-6). Scores (sums of up to 20 log-probs divided by a length power) within 1e-4 absolute.
// Cached vs recomputed logits: the same f32 arithmetic in another order (attention over
// masked cache slots vs a causal prefix): norm_err <= 1e-5, max |a - b| <= 1e-4, as the
// golden tolerances.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "longrun/models/generate.h"
#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

std::vector<std::string> gen_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(golden_dir()))
    if (e.path().filename().string().ends_with(".gen.safetensors")) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("generation: greedy and beam search match the oracle's sequences and scores") {
  const std::vector<std::string> files = gen_files();
  REQUIRE(files.size() >= 6);
  for (const std::string& path : files) {
    const std::string label = std::filesystem::path(path).filename().string();
    CAPTURE(label);
    auto io = SafetensorsFile::open(path);
    REQUIRE(io.ok());
    const auto& meta = (*io)->metadata();
    auto model = load_golden(meta.at("longrun.model"));
    const nlohmann::json opt = nlohmann::json::parse(meta.at("longrun.generate"));
    GenerateOptions o;
    o.num_beams = opt.at("num_beams").get<int>();
    o.num_return_sequences = o.num_beams;
    o.max_new_tokens = opt.at("max_new_tokens").get<int64_t>();
    o.min_length = opt.at("min_length").get<int64_t>();
    o.no_repeat_ngram_size = opt.at("no_repeat_ngram_size").get<int64_t>();
    o.length_penalty = opt.at("length_penalty").get<double>();
    Tensor ids, mask, seqs, scores;
    for (const SafetensorsEntry& e : (*io)->tensors()) {
      Tensor t = Tensor::from_bytes(e.desc, e.bytes).value();
      if (e.name == "input/input_ids") ids = t;
      if (e.name == "input/attention_mask") mask = t;
      if (e.name == "expected/sequences") seqs = t;
      if (e.name == "expected/scores") scores = t;
    }
    REQUIRE(!ids.empty());
    REQUIRE(!seqs.empty());
    const TensorView mask_view = mask.view();
    auto r = generate(model, session_options(), ids.view(), mask.empty() ? nullptr : &mask_view, o);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    const int64_t batch = seqs.desc().dim(0), k = seqs.desc().dim(1), len = seqs.desc().dim(2);
    REQUIRE(int64_t(r->sequences.size()) == batch);
    double worst = 0;
    for (int64_t b = 0; b < batch; ++b) {
      REQUIRE(int64_t(r->sequences[size_t(b)].size()) == k);
      for (int64_t j = 0; j < k; ++j) {
        std::vector<int64_t> want;
        for (int64_t i = 0; i < len; ++i) {
          const int64_t tok = seqs.data<int64_t>()[(b * k + j) * len + i];
          if (tok >= 0) want.push_back(tok);
        }
        CAPTURE(b);
        CAPTURE(j);
        CHECK(r->sequences[size_t(b)][size_t(j)] == want);
        const double err =
            std::abs(r->scores[size_t(b)][size_t(j)] - double(scores.data<float>()[b * k + j]));
        CHECK(err <= 1e-4);
        worst = std::max(worst, err);
      }
    }
    std::printf("models.%s %-48s beams %d: %lld sentences identical, %lld steps, worst score error %.2e\n",
                backend_name().c_str(), label.c_str(), o.num_beams, static_cast<long long>(batch),
                static_cast<long long>(r->steps), worst);
  }
}

TEST_CASE("generation: cached decoder steps equal the full forward, across cache growth") {
  for (const char* name :
       {"bart_tiny.safetensors", "transformer_base_tiny.safetensors", "fourier_bart_l12_r05.safetensors"}) {
    CAPTURE(name);
    auto model = load_golden(name);
    const int64_t batch = 2, n = 11, steps = 40;
    const Tensor ids = ids_tensor(batch, n, [](int64_t b, int64_t i) { return 3 + (b * 13 + i * 7) % 60; });
    std::vector<Tensor> step_logits;
    GenerateOptions o;
    o.max_new_tokens = steps;
    o.min_length = steps - 1;  // runs every step: the cache grows 16 -> 32 -> 40
    o.on_step_logits = [&](int64_t, const Tensor& l) { step_logits.push_back(l.clone().value()); };
    auto r = generate(model, session_options(), ids.view(), nullptr, o);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK(r->steps == steps);
    CHECK(r->step_shapes == 3);
    CHECK(r->cache_slots == steps);
    REQUIRE(int64_t(step_logits.size()) == steps);
    // The full forward on [start, generated tokens before the last].
    const int64_t start = 2;  // bart: decoder_start_token_id 2; fairseq: eos 2
    const Tensor dec = ids_tensor(batch, steps, [&](int64_t b, int64_t t) {
      return t == 0 ? start : r->sequences[size_t(b)][0][size_t(t - 1)];
    });
    auto full = run_model(*model, {{"input_ids", ids}, {"decoder_input_ids", dec}});
    REQUIRE_MESSAGE(full.ok(), full.status().to_string());
    const Tensor& logits = full->at("logits");  // [B, T, V]
    const int64_t v = logits.desc().dim(2);
    Error worst;
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t b = 0; b < batch; ++b) {
        const Error e = measure({step_logits[size_t(t)].data<float>() + b * v, size_t(v)},
                                {logits.data<float>() + (b * steps + t) * v, size_t(v)});
        worst.norm_err = std::max(worst.norm_err, e.norm_err);
        worst.max_abs = std::max(worst.max_abs, e.max_abs);
      }
    // Not vacuous: a step's logits differ from the next position's.
    const Error shifted =
        measure({step_logits[5].data<float>(), size_t(v)}, {logits.data<float>() + 6 * v, size_t(v)});
    CHECK(shifted.norm_err > 1e-2);
    CHECK(worst.norm_err <= 1e-5);
    CHECK(worst.max_abs <= 1e-4);
    std::printf("models.%s %s: cached vs full logits over %lld steps: norm %.2e abs %.2e\n",
                backend_name().c_str(), name, static_cast<long long>(steps), worst.norm_err, worst.max_abs);
  }
}

// A bf16 session (linear layers in bf16, a bf16 KV cache and cross K/V) against the f32
// session on the greedy goldens and the cache-growth models: while the two runs share a
// prefix, every step's logits are within kBf16LogitError of the f32 ones, so every step whose
// f32 decision wins by more than twice that (the chosen logit over every other token not
// above it: those were banned) must choose the same token; the first near tie ends the
// comparison. The caches must be bf16: half the bytes of the f32 ones (Lasformer's selection
// keys stay f32). The causal Combiner LMs (every form) likewise: their growing caches are
// bf16, the fixed-size ones (running maxima, row caches, per-segment / per-level summaries)
// f32, so their bytes are between half and all of f32's.
// kBf16LogitError: a linear layer rounds its input and weight to bf16 (relative 2^-9 each,
// ~4e-3 on a product), compounded over a few layers on O(1) activations and scaled by the
// output projection: a few 1e-2 absolute on these models' logits (|logit| < 10).
constexpr double kBf16LogitError = 0.1;
// kBf16LmLogitError: the same relative rounding on the causal Combiner LMs, whose logits are
// O(1) (|logit| < 2): a few 1e-3 absolute. Tighter than kBf16LogitError, so that their small
// decision margins (a few 0.1) are compared.
constexpr double kBf16LmLogitError = 0.02;

TEST_CASE("generation: a bf16 session keeps a bf16 KV cache and chooses the f32 tokens") {
  if (backend_name() == "cuda") return;  // the cuda backend is f32 only
  struct Case {
    std::string model;
    Tensor ids, mask;
    int64_t steps = 20, min_length = 0, no_repeat = 0;
  };
  std::vector<Case> cases;  // the greedy goldens' inputs, then two models across cache growth
  for (const std::string& path : gen_files()) {
    auto io = SafetensorsFile::open(path);
    REQUIRE(io.ok());
    const auto& meta = (*io)->metadata();
    const nlohmann::json opt = nlohmann::json::parse(meta.at("longrun.generate"));
    if (opt.at("num_beams").get<int>() != 1) continue;
    Case c{meta.at("longrun.model"),
           {},
           {},
           opt.at("max_new_tokens").get<int64_t>(),
           opt.at("min_length").get<int64_t>(),
           opt.at("no_repeat_ngram_size").get<int64_t>()};
    for (const SafetensorsEntry& e : (*io)->tensors()) {
      if (e.name == "input/input_ids") c.ids = Tensor::from_bytes(e.desc, e.bytes).value();
      if (e.name == "input/attention_mask") c.mask = Tensor::from_bytes(e.desc, e.bytes).value();
    }
    cases.push_back(std::move(c));
  }
  for (const char* name : {"bart_tiny.safetensors", "transformer_base_tiny.safetensors"})
    cases.push_back({name,
                     ids_tensor(2, 11, [](int64_t b, int64_t i) { return 3 + (b * 13 + i * 7) % 60; }),
                     {},
                     40,
                     39});  // every step runs: the cache grows 16 -> 32 -> 40
  // Every causal Combiner form: 2 prompts of 5 tokens + 36 steps (caches grow twice).
  for (const char* name : {"combiner_fixed_causal.safetensors", "combiner_axial_causal.safetensors",
                           "combiner_axial_causal_wsum.safetensors", "combiner_axial_causal_none.safetensors",
                           "combiner_mixture_causal.safetensors", "combiner_logsparse_causal.safetensors"})
    cases.push_back({name,
                     ids_tensor(2, 5, [](int64_t b, int64_t i) { return 2 + (b * 11 + i * 7 + 5) % 37; }),
                     {},
                     36,
                     35});
  REQUIRE(cases.size() >= 10);
  int64_t compared_all = 0;
  for (const Case& c : cases) {
    const std::string& name = c.model;
    CAPTURE(name);
    auto model = load_golden(name);
    const int64_t batch = c.ids.desc().dim(0), steps = c.steps;
    const TensorView mask_view = c.mask.view();
    struct Run {
      std::vector<Tensor> logits;
      GenerateResult result;
    };
    auto run = [&](Precision precision) {
      Run out;
      GenerateOptions o;
      o.max_new_tokens = steps;
      o.min_length = c.min_length;
      o.no_repeat_ngram_size = c.no_repeat;
      o.on_step_logits = [&](int64_t, const Tensor& l) { out.logits.push_back(l.clone().value()); };
      SessionOptions so = session_options();
      so.precision = precision;
      auto r = generate(model, so, c.ids.view(), c.mask.empty() ? nullptr : &mask_view, o);
      REQUIRE_MESSAGE(r.ok(), r.status().to_string());
      out.result = std::move(*r);
      return out;
    };
    const Run f32 = run(Precision::f32);
    const Run bf16 = run(Precision::bf16);
    const bool selection = std::string(name).starts_with("lasformer");
    const bool lm = std::string(name).starts_with("combiner");
    const double bound = lm ? kBf16LmLogitError : kBf16LogitError;
    if (lm) {  // the caches that do not grow stay f32
      CHECK(bf16.result.cache_bytes < f32.result.cache_bytes);
      CHECK(2 * bf16.result.cache_bytes > f32.result.cache_bytes);
    } else if (selection) {
      CHECK(bf16.result.cache_bytes < f32.result.cache_bytes);
    } else {
      CHECK(2 * bf16.result.cache_bytes == f32.result.cache_bytes);
    }
    double worst = 0, closest = 1e30;
    int64_t compared = 0;
    for (int64_t b = 0; b < batch; ++b) {
      const std::vector<int64_t>& want = f32.result.sequences[size_t(b)][0];
      const std::vector<int64_t>& got = bf16.result.sequences[size_t(b)][0];
      const int64_t v = f32.logits[0].desc().dim(1);
      for (size_t t = 0; t < want.size() && t < f32.logits.size() && t < bf16.logits.size(); ++t) {
        const float* lf = f32.logits[t].data<float>() + b * v;
        const float* lb = bf16.logits[t].data<float>() + b * v;
        double diff = 0, others = -1e30;
        for (int64_t j = 0; j < v; ++j) {
          diff = std::max(diff, std::abs(double(lf[j]) - double(lb[j])));
          // A token above the chosen one was banned (greedy takes the best allowed logit),
          // in both runs alike (the bans depend on the shared prefix only): not a rival.
          if (j != want[t] && lf[j] <= lf[want[t]]) others = std::max(others, double(lf[j]));
        }
        worst = std::max(worst, diff);
        CHECK(diff <= bound);
        const double margin = double(lf[want[t]]) - others;
        if (margin <= 2 * bound) break;  // a near tie: stop
        closest = std::min(closest, margin);
        REQUIRE(t < got.size());
        CHECK(got[t] == want[t]);
        ++compared;
        if (got[t] != want[t]) break;
      }
    }
    compared_all += compared;
    int identical = 0;  // whole sequences, near ties included: reported, not required
    for (int64_t b = 0; b < batch; ++b)
      identical += bf16.result.sequences[size_t(b)][0] == f32.result.sequences[size_t(b)][0];
    std::printf(
        "models.%s %s: bf16 vs f32 greedy: %lld decisions compared (smallest margin %.3f), %d of %lld "
        "sequences identical, worst logit difference %.2e; cache %lld bytes bf16, %lld f32\n",
        backend_name().c_str(), name.c_str(), static_cast<long long>(compared), compared ? closest : 0.0,
        identical, static_cast<long long>(batch), worst, static_cast<long long>(bf16.result.cache_bytes),
        static_cast<long long>(f32.result.cache_bytes));
  }
  CHECK(compared_all >= 20);  // not vacuous
}

TEST_CASE("generation: errors") {
  const Tensor ids = ids_tensor(1, 5, [](int64_t, int64_t i) { return 3 + i; });
  SUBCASE("an encoder-only model cannot generate") {
    auto r = Generator::create(load_golden("fourier_lra_l0_r02.safetensors"), session_options());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::unsupported);
    CHECK(r.status().to_string().find("fourier-lra") != std::string::npos);
  }
  SUBCASE("bad options and inputs") {
    auto g = Generator::create(load_golden("transformer_base_tiny.safetensors"), session_options());
    REQUIRE(g.ok());
    GenerateOptions o;
    o.num_beams = 2;
    o.num_return_sequences = 3;
    auto r = (*g)->generate(ids.view(), nullptr, o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().to_string().find("num_return_sequences") != std::string::npos);
    const TensorView v = ids.view();
    r = (*g)->generate(ids.view(), &v, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().to_string().find("attention_mask") != std::string::npos);
    const Tensor flat = ids_tensor(1, 5, [](int64_t, int64_t) { return 3; });
    const TensorView bad{TensorDesc(DType::i64, {5}), flat.view().data};
    r = (*g)->generate(bad, nullptr, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().to_string().find("input_ids") != std::string::npos);
    const Tensor out_of_vocab = ids_tensor(1, 3, [](int64_t, int64_t i) { return i == 1 ? 500 : 3; });
    r = (*g)->generate(out_of_vocab.view(), nullptr, {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().to_string().find("embed_tokens") != std::string::npos);
  }
}

}  // namespace
}  // namespace longrun::model_tests
