// Real weights: sentence-transformers/all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide), converted
// from its Hugging Face directory by longrun-convert to "bert" and to "fourier-bert"
// (filter before layer 3, ratio 0.5), embeds the sentences of tests/golden/minilm/ as the
// float64 PyTorch oracle does (tests/oracles/make_minilm_goldens.py): B = 1, the committed
// tokenizer ids, mean of last_hidden_state over the tokens, L2-normalised.
//
// The weights are not committed: tests/models/minilm_test.sh (CTest models.minilm) fetches
// them (tools/dev/fetch_minilm.sh), converts them and runs this case with the converted files
// in LONGRUN_MINILM_BERT / LONGRUN_MINILM_FOURIER_BERT. Without those variables (the plain
// models.<backend> runs) the case reports why and checks nothing.
//
// The reduced-precision case embeds longrun-demo's built-in sentences with the demo's own code
// (tools/demo/embed_demo.cpp) on the cpu backend at each reduced precision and at f32, and
// checks the precision's target for the mean cosine to the f32 embeddings (docs/usage.md#precision)
// and that the demo's similarity ranking is the f32 one. A precision the backend or CPU refuses
// is skipped with its message.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "demo/embed_demo.h"
#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

// Per-component tolerance on the unit-length 384-vectors. Components are ~1/sqrt(384) ≈ 0.05
// in size. Our f32 forward (6 post-LN layers; LayerNorm re-normalises every sub-layer, so
// rounding errors do not compound multiplicatively) differs from the float64 oracle by a
// relative ~1e-6 in the hidden states, and mean pooling over the tokens averages it further:
// expected component errors are ~1e-7, plus ≤ 3e-9 from rounding the golden to f32.
// 1e-5 leaves that an order of magnitude of headroom for summation-order differences between
// backends, while any mapping mistake (a transposed, missing or mis-tied weight) moves
// components by ~1e-2.
constexpr double kTolerance = 1e-5;

std::string expected_path() {
  return std::string(LONGRUN_GOLDEN_DIR) + "/minilm/minilm.expected.safetensors";
}

// Mean over the tokens of last_hidden_state [1, T, D], L2-normalised (in double).
std::vector<double> embed(const Model& model, const SafetensorsEntry& ids) {
  const int64_t n = ids.desc.dim(0);
  const int64_t* id = reinterpret_cast<const int64_t*>(ids.bytes.data());
  const Tensor input = ids_tensor(1, n, [&](int64_t, int64_t i) { return id[i]; });
  auto out = run_model(model, {{"input_ids", input}});
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  const Tensor& h = out->at("last_hidden_state");
  const int64_t t = h.desc().dim(1), d = h.desc().dim(2);
  std::vector<double> e(size_t(d), 0.0);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < d; ++j) e[size_t(j)] += h.data<float>()[i * d + j];
  double norm = 0.0;
  for (double& v : e) norm += (v / double(t)) * (v / double(t));
  norm = std::sqrt(norm);
  for (double& v : e) v = v / double(t) / norm;
  return e;
}

using Embeddings = std::vector<std::vector<float>>;

// The demo's sentences embedded as longrun-demo does by the model file at `path` on the cpu
// backend at `precision` (an `unsupported` status where the backend or CPU refuses it).
Result<Embeddings> embed_demo(const char* path, Precision precision) {
  demo::EmbedOptions options;
  options.backend = "cpu";
  options.precision = precision;
  return demo::embed_sentences(path, options, demo::default_sentences());
}

// The mean and the smallest cosine of each embedding in `got` to the same sentence's in `ref`.
struct Cosines {
  double mean = 0.0, min = 1.0;
};
Cosines cosines(const Embeddings& got, const Embeddings& ref) {
  REQUIRE(got.size() == ref.size());
  Cosines r;
  double sum = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double c = demo::cosine(got[i], ref[i]);
    sum += c;
    r.min = std::min(r.min, c);
  }
  r.mean = sum / double(got.size());
  return r;
}

}  // namespace

TEST_CASE("minilm: all-MiniLM-L6-v2 converted to bert and fourier-bert embeds as the oracle") {
  const char* bert_path = std::getenv("LONGRUN_MINILM_BERT");
  const char* fourier_path = std::getenv("LONGRUN_MINILM_FOURIER_BERT");
  if (!bert_path || !*bert_path || !fourier_path || !*fourier_path) {
    MESSAGE("minilm: LONGRUN_MINILM_BERT / LONGRUN_MINILM_FOURIER_BERT not set (run by CTest models.minilm)");
    return;
  }
  auto golden = SafetensorsFile::open(expected_path());
  REQUIRE_MESSAGE(golden.ok(), golden.status().to_string());
  auto bert = Model::load(bert_path);
  auto fourier = Model::load(fourier_path);
  REQUIRE_MESSAGE(bert.ok(), bert.status().to_string());
  REQUIRE_MESSAGE(fourier.ok(), fourier.status().to_string());
  CHECK((*bert)->arch() == "bert");
  CHECK((*fourier)->arch() == "fourier-bert");

  double max_bert = 0.0, max_fourier = 0.0, cosine_sum = 0.0;
  int sentences = 0;
  for (;; ++sentences) {
    const std::string i = std::to_string(sentences);
    const SafetensorsEntry* ids = (*golden)->find("ids/" + i);
    if (!ids) break;
    CAPTURE(sentences);
    std::vector<double> e[2];
    double* max_err[2] = {&max_bert, &max_fourier};
    const char* prefix[2] = {"bert/", "fourier-bert/"};
    const Model* model[2] = {bert->get(), fourier->get()};
    for (int m = 0; m < 2; ++m) {
      e[m] = embed(*model[m], *ids);
      const SafetensorsEntry* want = (*golden)->find(prefix[m] + i);
      REQUIRE(want);
      REQUIRE(want->desc.numel() == int64_t(e[m].size()));
      const float* w = reinterpret_cast<const float*>(want->bytes.data());
      double err = 0.0;
      for (size_t j = 0; j < e[m].size(); ++j) err = std::max(err, std::abs(e[m][j] - double(w[j])));
      CHECK_MESSAGE(err <= kTolerance, prefix[m], " max |Δ| ", err);
      *max_err[m] = std::max(*max_err[m], err);
    }
    double dot = 0.0;
    for (size_t j = 0; j < e[0].size(); ++j) dot += e[0][j] * e[1][j];
    cosine_sum += dot;
  }
  REQUIRE(sentences > 0);
  std::printf(
      "minilm (%s): %d sentences, max |Δ| bert %.3g, fourier-bert %.3g (tolerance %.0e); "
      "mean cosine(fourier-bert, bert) %.4f (golden metadata %s)\n",
      backend_name().c_str(), sentences, max_bert, max_fourier, kTolerance, cosine_sum / sentences,
      (*golden)->metadata().count("mean_cosine_fourier_vs_bert")
          ? (*golden)->metadata().at("mean_cosine_fourier_vs_bert").c_str()
          : "?");
}

// The smallest mean cosine (over the demo's sentences) of an embedding at each reduced
// precision to its f32 embedding. int8 quantizes each linear layer's input per row and its
// weight per output channel to 8 bits; bf16 keeps 8 significant bits of every value.
struct PrecisionTarget {
  Precision precision;
  double min_mean_cosine;
};
constexpr PrecisionTarget kPrecisionTargets[] = {
    {Precision::int8, 0.99},
    {Precision::bf16, 0.999},
};

// The demo's ranking must stay that of f32 except between two sentences whose f32
// similarities to the ranked one are a tie: closer than 2e-3, the resolution of one bf16
// rounding (2^-9) on a similarity's scale, so no reduced format can be expected to order them.
constexpr double kRankingTie = 2e-3;

TEST_CASE("minilm: the demo's sentences at reduced precision keep their f32 embeddings and ranking") {
  const char* bert_path = std::getenv("LONGRUN_MINILM_BERT");
  if (!bert_path || !*bert_path) {
    MESSAGE("minilm precision: LONGRUN_MINILM_BERT not set (run by CTest models.minilm)");
    return;
  }
  auto f32 = embed_demo(bert_path, Precision::f32);
  REQUIRE_MESSAGE(f32.ok(), f32.status().to_string());
  const std::vector<std::vector<size_t>> f32_ranking = demo::similarity_ranking(*f32);
  for (const PrecisionTarget& target : kPrecisionTargets) {
    const std::string name(precision_name(target.precision));
    CAPTURE(name);
    auto got = embed_demo(bert_path, target.precision);
    if (!got.ok() && got.status().code() == StatusCode::unsupported) {
      std::printf("minilm precision %s: skipped: %s\n", name.c_str(), got.status().to_string().c_str());
      continue;
    }
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    const auto [mean, min] = cosines(*got, *f32);
    const std::vector<std::vector<size_t>> ranking = demo::similarity_ranking(*got);
    std::printf(
        "minilm precision %s (cpu): %zu demo sentences, cosine to f32 mean %.5f min %.5f (target mean >= "
        "%g); similarity ranking %s f32's\n",
        name.c_str(), got->size(), mean, min, target.min_mean_cosine,
        ranking == f32_ranking ? "identical to" : "differs from");
    CHECK_MESSAGE(mean >= target.min_mean_cosine, name, " mean cosine ", mean);
    // Every pair of neighbours the two rankings order differently must be a tie in f32.
    for (size_t i = 0; i < ranking.size(); ++i)
      for (size_t a = 0; a < ranking[i].size(); ++a)
        for (size_t b = a + 1; b < ranking[i].size(); ++b) {
          const size_t first = ranking[i][a], second = ranking[i][b];
          const auto at = [&](size_t j) {
            return std::ranges::find(f32_ranking[i], j) - f32_ranking[i].begin();
          };
          if (at(first) < at(second)) continue;
          const double gap = std::fabs(double(demo::cosine((*f32)[i], (*f32)[first])) -
                                       demo::cosine((*f32)[i], (*f32)[second]));
          std::printf(
              "minilm precision %s: sentence %zu ranks %zu before %zu; their f32 similarities differ by %.1e "
              "(a tie below %.0e)\n",
              name.c_str(), i, first, second, gap, kRankingTie);
          CHECK_MESSAGE(gap < kRankingTie, name, " sentence ", i, ": ", first, " and ", second,
                        " swapped, f32 gap ", gap);
        }
  }
}

// `longrun-convert --quantize int8` (docs/checkpoints.md#quantized-weights): the int8
// session on the quantized file uses the stored weights, the ones an int8 session on the
// source computes, so the embeddings are the same floats.
TEST_CASE("minilm: the --quantize int8 file embeds as int8 on the source file, bit for bit") {
  const char* bert_path = std::getenv("LONGRUN_MINILM_BERT");
  const char* int8_path = std::getenv("LONGRUN_MINILM_BERT_INT8");
  if (!bert_path || !*bert_path || !int8_path || !*int8_path) {
    MESSAGE(
        "minilm quantized: LONGRUN_MINILM_BERT / LONGRUN_MINILM_BERT_INT8 not set (run by CTest "
        "models.minilm)");
    return;
  }
  auto f32 = embed_demo(bert_path, Precision::f32);
  REQUIRE_MESSAGE(f32.ok(), f32.status().to_string());
  auto source = embed_demo(bert_path, Precision::int8);
  if (!source.ok() && source.status().code() == StatusCode::unsupported) {
    std::printf("minilm quantized: skipped: %s\n", source.status().to_string().c_str());
    return;
  }
  REQUIRE_MESSAGE(source.ok(), source.status().to_string());
  auto quantized = embed_demo(int8_path, Precision::int8);
  REQUIRE_MESSAGE(quantized.ok(), quantized.status().to_string());
  REQUIRE(quantized->size() == source->size());
  for (size_t i = 0; i < source->size(); ++i) {
    CAPTURE(i);
    CHECK((*quantized)[i] == (*source)[i]);
  }
  // An f32 session on the quantized file runs q · scale: lossy, reported, not a target.
  auto dequantized = embed_demo(int8_path, Precision::f32);
  REQUIRE_MESSAGE(dequantized.ok(), dequantized.status().to_string());
  std::printf(
      "minilm quantized file, int8 (cpu): embeddings identical to int8 on the source: %s; mean cosine to f32 "
      "%.6f; f32 session on the quantized file: mean cosine to f32 %.6f\n",
      std::equal(quantized->begin(), quantized->end(), source->begin()) ? "yes" : "no",
      cosines(*quantized, *f32).mean, cosines(*dequantized, *f32).mean);
}

}  // namespace longrun::model_tests
