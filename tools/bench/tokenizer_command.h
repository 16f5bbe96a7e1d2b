// `longrun-bench tokenizer`: Tokenizer::encode throughput on one core, in MB/s of UTF-8 text
// and tokens/s, for each tokenizer given (by default the BERT WordPiece and byte-level BPE
// goldens of the source tree) on one text (by default the English prose of
// tests/golden/tokenizer/bpe_corpus.txt repeated to the asked size).
#pragma once

#include <string>
#include <vector>

namespace longrun::bench {

struct TokenizerOptions {
  std::vector<std::string> tokenizers;  // directories or tokenizer.json files; empty = the goldens
  std::string text;                     // a UTF-8 file; "" = the default corpus
  double mib = 4;                       // the text is repeated or cut to this size
  int repeat = 5;                       // timed encodes, median reported
  int warmup = 1;                       // untimed encodes first
  std::string json;                     // "" = none, "-" = stdout
};

// The tokenizers measured by default: the golden directories of the source tree.
std::vector<std::string> default_tokenizers();

// Runs the measurement; returns the exit code (0, 1 when a tokenizer or the text cannot be read
// or encoded, 2 when --json cannot be opened).
int run_tokenizer(const TokenizerOptions& options);

}  // namespace longrun::bench
