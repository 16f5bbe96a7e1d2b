// The host side of generation: per-sentence beams, the fairseq selection rules of
// longrun/models/generate.h, and which cache row each new beam continues. No graphs here:
// generate.cpp feeds it each step's logits and reorders the KV cache by source_rows().
#pragma once

#include <cstdint>
#include <vector>

namespace longrun::models {

struct BeamRules {
  int64_t vocab = 0;
  int64_t pad = 1, eos = 2;
  int beams = 1;
  int64_t max_steps = 1;  // the last step only allows eos
  int64_t min_length = 0;
  int64_t no_repeat_ngram = 0;
  double length_penalty = 1.0;
};

// The rules of generate.h's options for a decoder of `vocab` tokens running `max_steps` steps.
template <class Options>
BeamRules beam_rules(const Options& o, int64_t vocab, int64_t pad, int64_t eos, int beams,
                     int64_t max_steps) {
  return {.vocab = vocab,
          .pad = pad,
          .eos = eos,
          .beams = beams,
          .max_steps = max_steps,
          .min_length = o.min_length,
          .no_repeat_ngram = o.no_repeat_ngram_size,
          .length_penalty = o.length_penalty};
}

class BeamSearch {
 public:
  // Rows r = b * beams + k. Every row starts as [start]; only beam 0 of a sentence is live.
  BeamSearch(int64_t batch, int64_t start_token, const BeamRules& rules);

  int64_t rows() const { return int64_t(hyps_.size()); }
  // The token each row feeds at the next step.
  std::vector<int64_t> last_tokens() const;
  // One step: logits f32 [rows, vocab] of the tokens last_tokens() fed at step `step`.
  // Afterwards row r continues source_rows()[r] (reorder the caches so).
  void advance(int64_t step, const float* logits);
  const std::vector<int64_t>& source_rows() const { return source_; }
  // True when every source row is the row itself (no cache reorder needed).
  bool identity_order() const;
  bool done() const;

  struct Hypothesis {
    double score = 0.0;  // cumulative log-prob / length ^ length_penalty
    std::vector<int64_t> tokens;
  };
  // Finished hypotheses of sentence b, best first (stable for equal scores).
  std::vector<Hypothesis> finished(int64_t b) const;
  // The best `per_sentence` finished hypotheses of every sentence: tokens and scores.
  void take_results(int per_sentence, std::vector<std::vector<std::vector<int64_t>>>* sequences,
                    std::vector<std::vector<double>>* scores) const;

 private:
  void log_probs(int64_t row, int64_t step, const float* logits, std::vector<double>* lp) const;

  BeamRules r_;
  int64_t batch_;
  std::vector<std::vector<int64_t>> hyps_;  // per row, start token included
  std::vector<double> score_;               // per row; -inf = not live
  std::vector<int64_t> source_;
  std::vector<std::vector<Hypothesis>> finished_;
  std::vector<bool> done_;
};

}  // namespace longrun::models
