// The real-model part of longrun-demo: sentence embeddings with a converted BERT-family model
// file that carries its tokenizer (longrun-convert of an HF directory, e.g. all-MiniLM-L6-v2).
// Each sentence is tokenized by longrun's own tokenizer, run alone (B = 1, no padding) through
// the model, mean-pooled over its tokens and L2-normalised (pool_embeddings,
// longrun/models/text.h: sentence-transformers' Pooling + Normalize). Prints the cosine-similarity matrix;
// its ranking (each sentence's others, most similar first); with a second model (e.g. the same
// weights as fourier-bert) also the cosine of each sentence's two embeddings and both run times.
#include "demo/embed_demo.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "longrun/models/model.h"
#include "longrun/models/text.h"
#include "longrun/safetensors.h"
#include "longrun/session.h"
#include "longrun/tensor.h"
#include "longrun/tokenizer.h"

namespace longrun::demo {
namespace {

using Clock = std::chrono::steady_clock;

struct Embedder {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Session> session;
  Tokenizer tokenizer;
  double ms = 0;  // total run time over all sentences
};

Result<Embedder> open_embedder(const std::string& path, const EmbedOptions& o) {
  LR_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(path));
  LR_ASSIGN_OR_RETURN(std::optional<Tokenizer> tokenizer, file_tokenizer(*file));
  if (!tokenizer)
    return invalid_argument(path + ": the model file has no tokenizer (metadata key " +
                            std::string(kTokenizerMetadataKey) +
                            "); convert an HF directory with longrun-convert to embed one");
  Tokenizer tok = std::move(*tokenizer);
  LR_ASSIGN_OR_RETURN(auto model, Model::from_file(file));
  SessionOptions so;
  so.backend = o.backend;
  so.threads = o.threads;
  so.precision = o.precision;
  LR_ASSIGN_OR_RETURN(auto session, model->create_session(so, {"input_ids"}));
  return Embedder{std::move(model), std::move(session), std::move(tok), 0.0};
}

// Mean of last_hidden_state over its rows, L2-normalised.
Result<std::vector<float>> embed(Embedder& e, const std::string& text) {
  LR_ASSIGN_OR_RETURN(std::vector<int64_t> ids, e.tokenizer.encode(text));
  const int64_t n = int64_t(ids.size());
  const int64_t dims[2] = {1, n};
  LR_ASSIGN_OR_RETURN(Tensor t,
                      Tensor::from_vector<int64_t>(DType::i64, dims, std::span<const int64_t>(ids)));
  const NamedTensorRef in[1] = {{"input_ids", t.view()}};
  const auto t0 = Clock::now();
  LR_ASSIGN_OR_RETURN(std::vector<NamedTensor> out, e.session->run(in));
  e.ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  for (const NamedTensor& o : out) {
    if (o.name != "last_hidden_state") continue;
    LR_ASSIGN_OR_RETURN(Tensor pooled, pool_embeddings(o.tensor.view(), nullptr, Pooling::mean, true));
    return std::vector<float>(pooled.data<float>(), pooled.data<float>() + pooled.numel());
  }
  return invalid_argument(e.model->path() + ": the model has no last_hidden_state output");
}

// A refused precision (or backend) is a usage error (2); anything else a failure (1).
int failure(const Status& st) {
  std::fprintf(stderr, "longrun-demo: %s\n", st.to_string().c_str());
  return st.code() == StatusCode::unsupported ? 2 : 1;
}

}  // namespace

const std::vector<std::string>& default_sentences() {
  static const std::vector<std::string> sentences = {
      "A man is eating food.",        "A man is eating a piece of bread.",
      "The girl is carrying a baby.", "A man is riding a horse.",
      "A woman is playing violin.",   "A cheetah is running behind its prey.",
  };
  return sentences;
}

Result<std::vector<std::vector<float>>> embed_sentences(const std::string& path, const EmbedOptions& options,
                                                        const std::vector<std::string>& sentences) {
  LR_ASSIGN_OR_RETURN(Embedder e, open_embedder(path, options));
  std::vector<std::vector<float>> out;
  for (const std::string& s : sentences) {
    LR_ASSIGN_OR_RETURN(std::vector<float> v, embed(e, s));
    out.push_back(std::move(v));
  }
  return out;
}

float cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) s += double(a[i]) * b[i];
  return float(s);
}

std::vector<std::vector<size_t>> similarity_ranking(const std::vector<std::vector<float>>& embeddings) {
  std::vector<std::vector<size_t>> ranking(embeddings.size());
  for (size_t i = 0; i < embeddings.size(); ++i) {
    for (size_t j = 0; j < embeddings.size(); ++j)
      if (j != i) ranking[i].push_back(j);
    std::vector<float> c(embeddings.size());
    for (size_t j : ranking[i]) c[j] = cosine(embeddings[i], embeddings[j]);
    std::stable_sort(ranking[i].begin(), ranking[i].end(), [&](size_t a, size_t b) { return c[a] > c[b]; });
  }
  return ranking;
}

int run_embed_demo(const EmbedOptions& o) {
  const std::vector<std::string>& sentences = o.sentences.empty() ? default_sentences() : o.sentences;
  auto main_model = open_embedder(o.model, o);
  if (!main_model.ok()) return failure(main_model.status());
  std::unique_ptr<Embedder> other;
  if (!o.compare.empty()) {
    auto c = open_embedder(o.compare, o);
    if (!c.ok()) return failure(c.status());
    other = std::make_unique<Embedder>(std::move(*c));
  }
  std::printf(
      "longrun demo: sentence embeddings with %s (arch %s, %s), backend %s, precision %s, %d thread(s)\n",
      o.model.c_str(), main_model->model->arch().c_str(), main_model->tokenizer.description().c_str(),
      o.backend.c_str(), std::string(precision_name(o.precision)).c_str(), o.threads);
  std::vector<std::vector<float>> emb, emb2;
  for (const std::string& s : sentences) {
    auto v = embed(*main_model, s);
    if (!v.ok()) {
      std::fprintf(stderr, "longrun-demo: \"%s\": %s\n", s.c_str(), v.status().to_string().c_str());
      return 1;
    }
    emb.push_back(std::move(*v));
    if (other) {
      auto w = embed(*other, s);
      if (!w.ok()) {
        std::fprintf(stderr, "longrun-demo: \"%s\": %s\n", s.c_str(), w.status().to_string().c_str());
        return 1;
      }
      emb2.push_back(std::move(*w));
    }
  }
  std::printf("\ncosine similarity (%s):\n", main_model->model->arch().c_str());
  for (size_t i = 0; i < sentences.size(); ++i) {
    std::printf("  [%zu]", i);
    for (size_t j = 0; j < sentences.size(); ++j) std::printf(" %6.3f", cosine(emb[i], emb[j]));
    std::printf("  %s\n", sentences[i].c_str());
  }
  std::printf("\nranking (the other sentences, most similar first):\n");
  const std::vector<std::vector<size_t>> ranking = similarity_ranking(emb);
  for (size_t i = 0; i < ranking.size(); ++i) {
    std::printf("  [%zu]", i);
    for (size_t j : ranking[i]) std::printf(" %zu", j);
    std::printf("\n");
  }
  std::printf("\n%s: %zu sentences in %.1f ms (model runs only)\n", main_model->model->arch().c_str(),
              sentences.size(), main_model->ms);
  if (other) {
    double mean = 0;
    std::printf("\n%s (%s) vs %s, cosine of the two embeddings per sentence:\n", o.compare.c_str(),
                other->model->arch().c_str(), main_model->model->arch().c_str());
    for (size_t i = 0; i < sentences.size(); ++i) {
      const float c = cosine(emb[i], emb2[i]);
      mean += c;
      std::printf("  [%zu] %.4f\n", i, c);
    }
    std::printf("  mean %.4f; %s: %.1f ms\n", mean / double(sentences.size()), other->model->arch().c_str(),
                other->ms);
  }
  return 0;
}

}  // namespace longrun::demo
