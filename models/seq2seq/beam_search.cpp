#include "seq2seq/beam_search.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

namespace longrun::models {

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
}

BeamSearch::BeamSearch(int64_t batch, int64_t start_token, const BeamRules& rules)
    : r_(rules), batch_(batch) {
  const size_t rows = size_t(batch * rules.beams);
  hyps_.assign(rows, std::vector<int64_t>{start_token});
  score_.assign(rows, kNegInf);
  for (int64_t b = 0; b < batch; ++b) score_[size_t(b * r_.beams)] = 0.0;
  source_.resize(rows);
  std::iota(source_.begin(), source_.end(), int64_t(0));
  finished_.resize(size_t(batch));
  done_.assign(size_t(batch), false);
}

std::vector<int64_t> BeamSearch::last_tokens() const {
  std::vector<int64_t> t(hyps_.size());
  for (size_t r = 0; r < hyps_.size(); ++r) t[r] = hyps_[r].back();
  return t;
}

bool BeamSearch::identity_order() const {
  for (size_t r = 0; r < source_.size(); ++r)
    if (source_[r] != int64_t(r)) return false;
  return true;
}

bool BeamSearch::done() const {
  return std::all_of(done_.begin(), done_.end(), [](bool d) { return d; });
}

void BeamSearch::log_probs(int64_t row, int64_t step, const float* logits, std::vector<double>* lp) const {
  const float* x = logits + row * r_.vocab;
  double m = kNegInf;
  for (int64_t v = 0; v < r_.vocab; ++v) m = std::max(m, double(x[v]));
  double sum = 0.0;
  for (int64_t v = 0; v < r_.vocab; ++v) sum += std::exp(double(x[v]) - m);
  const double lse = m + std::log(sum);
  for (int64_t v = 0; v < r_.vocab; ++v) (*lp)[size_t(v)] = double(x[v]) - lse;
  if (r_.pad != r_.eos && r_.pad >= 0 && r_.pad < r_.vocab) (*lp)[size_t(r_.pad)] = kNegInf;
  if (step < r_.min_length) (*lp)[size_t(r_.eos)] = kNegInf;
  if (step == r_.max_steps - 1) {
    const double keep = (*lp)[size_t(r_.eos)];
    std::fill(lp->begin(), lp->end(), kNegInf);
    (*lp)[size_t(r_.eos)] = keep;
  }
  const int64_t n = r_.no_repeat_ngram;
  const std::vector<int64_t>& h = hyps_[size_t(row)];
  const int64_t len = int64_t(h.size());
  if (n > 0 && len + 1 >= n) {
    // Tokens that follow an earlier occurrence of the hypothesis's last n-1 tokens.
    for (int64_t i = 0; i + n - 1 < len; ++i) {
      bool same = true;
      for (int64_t j = 0; j < n - 1 && same; ++j) same = h[size_t(i + j)] == h[size_t(len - n + 1 + j)];
      if (same) (*lp)[size_t(h[size_t(i + n - 1)])] = kNegInf;
    }
  }
}

void BeamSearch::advance(int64_t step, const float* logits) {
  const int k = r_.beams;
  const int64_t v = r_.vocab;
  std::vector<double> lp(static_cast<size_t>(v));
  std::vector<std::vector<int64_t>> new_hyps = hyps_;
  std::vector<double> new_score = score_;
  std::iota(source_.begin(), source_.end(), int64_t(0));
  struct Cand {
    double score;
    int64_t index;  // beam * V + token
  };
  std::vector<Cand> cands;
  for (int64_t b = 0; b < batch_; ++b) {
    if (done_[size_t(b)]) continue;
    cands.clear();
    for (int beam = 0; beam < k; ++beam) {
      const int64_t row = b * k + beam;
      if (!std::isfinite(score_[size_t(row)])) continue;
      log_probs(row, step, logits, &lp);
      for (int64_t t = 0; t < v; ++t)
        if (std::isfinite(lp[size_t(t)]))
          cands.push_back({score_[size_t(row)] + lp[size_t(t)], beam * v + t});
    }
    const size_t top = std::min(cands.size(), size_t(2 * k));
    std::partial_sort(cands.begin(), cands.begin() + std::ptrdiff_t(top), cands.end(),
                      [](const Cand& a, const Cand& c) {
                        return a.score > c.score || (a.score == c.score && a.index < c.index);
                      });
    int kept = 0;
    for (size_t rank = 0; rank < top; ++rank) {
      const Cand& c = cands[rank];
      const int64_t beam = c.index / v, token = c.index % v;
      const int64_t src = b * k + beam;
      if (token == r_.eos) {
        if (rank < size_t(k) && finished_[size_t(b)].size() < size_t(k)) {
          Hypothesis h;
          h.score = c.score / std::pow(double(step + 1), r_.length_penalty);
          h.tokens.assign(hyps_[size_t(src)].begin() + 1, hyps_[size_t(src)].end());
          h.tokens.push_back(token);
          finished_[size_t(b)].push_back(std::move(h));
        }
      } else if (kept < k) {
        const int64_t row = b * k + kept++;
        new_hyps[size_t(row)] = hyps_[size_t(src)];
        new_hyps[size_t(row)].push_back(token);
        new_score[size_t(row)] = c.score;
        source_[size_t(row)] = src;
      }
    }
    for (int beam = kept; beam < k; ++beam) {  // fewer than K continue: the rest go dead
      const int64_t row = b * k + beam;
      new_hyps[size_t(row)] = {r_.pad >= 0 && r_.pad < v ? r_.pad : r_.eos};
      new_score[size_t(row)] = kNegInf;
      source_[size_t(row)] = row;
    }
    if (finished_[size_t(b)].size() >= size_t(k) || kept == 0) {
      done_[size_t(b)] = true;
      for (int beam = 0; beam < k; ++beam) new_score[size_t(b * k + beam)] = kNegInf;
    }
  }
  hyps_ = std::move(new_hyps);
  score_ = std::move(new_score);
}

std::vector<BeamSearch::Hypothesis> BeamSearch::finished(int64_t b) const {
  std::vector<Hypothesis> out = finished_[size_t(b)];
  std::stable_sort(out.begin(), out.end(),
                   [](const Hypothesis& a, const Hypothesis& c) { return a.score > c.score; });
  return out;
}

void BeamSearch::take_results(int per_sentence, std::vector<std::vector<std::vector<int64_t>>>* sequences,
                              std::vector<std::vector<double>>* scores) const {
  sequences->assign(size_t(batch_), {});
  scores->assign(size_t(batch_), {});
  for (int64_t b = 0; b < batch_; ++b) {
    const auto hyps = finished(b);
    for (size_t j = 0; j < hyps.size() && j < size_t(per_sentence); ++j) {
      (*sequences)[size_t(b)].push_back(hyps[j].tokens);
      (*scores)[size_t(b)].push_back(hyps[j].score);
    }
  }
}

}  // namespace longrun::models
