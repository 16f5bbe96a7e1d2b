// longrun-demo's real-model mode (embed_demo.cpp): sentence embeddings with a converted
// BERT-family model file that carries its tokenizer.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "longrun/precision.h"
#include "longrun/status.h"

namespace longrun::demo {

struct EmbedOptions {
  std::string model;                   // native model file with a longrun.tokenizer entry
  std::string compare;                 // optional second model (e.g. the same weights as fourier-bert)
  std::vector<std::string> sentences;  // empty: the built-in set
  std::string backend = "cpu";
  int threads = 1;
  Precision precision = Precision::f32;  // SessionOptions::precision of every session
};

// The built-in sentences (the demo's default texts; tests/models/minilm_test.cpp embeds them too).
const std::vector<std::string>& default_sentences();

// Each sentence embedded as the demo does with the model file at `path` (options.backend,
// threads and precision): tokenized by the file's tokenizer, run alone, mean-pooled and
// L2-normalised. A precision the backend refuses is an `unsupported` status.
Result<std::vector<std::vector<float>>> embed_sentences(const std::string& path, const EmbedOptions& options,
                                                        const std::vector<std::string>& sentences);

// The cosine of two unit-length embeddings (their dot product, summed in double).
float cosine(const std::vector<float>& a, const std::vector<float>& b);

// The demo's similarity ranking: for each sentence i, the other sentences in order of
// decreasing cosine to i (ties: the lower index first).
std::vector<std::vector<size_t>> similarity_ranking(const std::vector<std::vector<float>>& embeddings);

// Prints the cosine-similarity matrix and ranking (and the comparison); returns the exit
// status: 0, 1 on a failure, 2 when the backend refuses the precision.
int run_embed_demo(const EmbedOptions& options);

}  // namespace longrun::demo
