// longrun-demo's real-model mode (embed_demo.cpp): sentence embeddings with a converted
// BERT-family model file that carries its tokenizer.
#pragma once

#include <string>
#include <vector>

namespace longrun::demo {

struct EmbedOptions {
  std::string model;                   // native model file with a longrun.tokenizer entry
  std::string compare;                 // optional second model (e.g. the same weights as fourier-bert)
  std::vector<std::string> sentences;  // empty: the built-in set
  std::string backend = "cpu";
  int threads = 1;
};

// Prints the cosine-similarity matrix (and the comparison); returns the exit status.
int run_embed_demo(const EmbedOptions& options);

}  // namespace longrun::demo
