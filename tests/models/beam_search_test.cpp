// The host-side beam search rules (models/seq2seq/beam_search.h) on hand-made logits: pad
// banned, min_length, the forced eos of the last step, no-repeat n-grams, finishing among the
// first K candidates only, length penalty, and which row each beam continues.
#include "models/seq2seq/beam_search.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace longrun::models {
namespace {

// Vocabulary 6: 0 start, 1 pad, 2 eos, 3..5 words.
constexpr int64_t kV = 6;

std::vector<float> rows_of(std::initializer_list<std::vector<float>> rows) {
  std::vector<float> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

TEST_CASE("beam search: greedy follows the argmax; pad is banned; min_length bans eos") {
  BeamSearch s(1, 0, {.vocab = kV, .pad = 1, .eos = 2, .beams = 1, .max_steps = 5, .min_length = 1});
  // Step 0: pad and eos are the largest, but pad is banned and eos is below min_length.
  s.advance(0, rows_of({{0, 9, 8, 1, 3, 2}}).data());
  CHECK(s.last_tokens() == std::vector<int64_t>{4});
  // Step 1: eos wins and finishes the sentence.
  s.advance(1, rows_of({{0, 0, 5, 1, 1, 1}}).data());
  REQUIRE(s.done());
  const auto f = s.finished(0);
  REQUIRE(f.size() == 1);
  CHECK(f[0].tokens == std::vector<int64_t>{4, 2});
}

TEST_CASE("beam search: the last step forces eos; the score is normalised by length ^ penalty") {
  BeamSearch s(1, 0, {.vocab = kV, .pad = 1, .eos = 2, .beams = 1, .max_steps = 2, .length_penalty = 2.0});
  const std::vector<float> l0 = {0, 0, -5, 3, 0, 0};
  s.advance(0, l0.data());
  const std::vector<float> l1 = {0, 0, -5, 9, 0, 0};  // eos is forced anyway
  s.advance(1, l1.data());
  REQUIRE(s.done());
  const auto f = s.finished(0);
  REQUIRE(f.size() == 1);
  CHECK(f[0].tokens == std::vector<int64_t>{3, 2});
  auto log_softmax = [](const std::vector<float>& x, int i) {
    double m = -1e30, sum = 0;
    for (int j = 0; j < kV; ++j)
      if (j != 1) m = std::max(m, double(x[size_t(j)]));
    for (int j = 0; j < kV; ++j) sum += std::exp(double(x[size_t(j)]) - m);  // pad counts in the softmax
    return double(x[size_t(i)]) - m - std::log(sum);
  };
  const double want = (log_softmax(l0, 3) + log_softmax(l1, 2)) / std::pow(2.0, 2.0);
  CHECK(f[0].score == doctest::Approx(want).epsilon(1e-12));
}

TEST_CASE("beam search: no_repeat_ngram bans the token that would repeat an n-gram") {
  BeamSearch s(1, 0, {.vocab = kV, .pad = 1, .eos = 2, .beams = 1, .max_steps = 10, .no_repeat_ngram = 2});
  const std::vector<float> prefer3 = {0, 0, -9, 5, 4, 0};
  s.advance(0, prefer3.data());  // [0, 3]
  s.advance(1, prefer3.data());  // [0, 3, 3]: bigram (3, 3) now seen
  CHECK(s.last_tokens() == std::vector<int64_t>{3});
  s.advance(2, prefer3.data());  // (3, 3) again is banned: 4
  CHECK(s.last_tokens() == std::vector<int64_t>{4});
}

TEST_CASE("beam search: two beams, eos only finishes from the first K candidates, rows reorder") {
  BeamSearch s(1, 0, {.vocab = kV, .pad = 1, .eos = 2, .beams = 2, .max_steps = 10});
  // Step 0: only beam 0 is live; words 3 and 4 tie, the lower index ranks first.
  std::vector<float> l = rows_of({{0, 0, -9, 5, 5, 0}, {0, 0, 0, 0, 0, 0}});
  s.advance(0, l.data());
  CHECK(s.last_tokens() == std::vector<int64_t>{3, 4});
  CHECK(s.source_rows() == std::vector<int64_t>{0, 0});
  CHECK_FALSE(s.identity_order());
  // Step 1: row 0 is uniform (its eos ranks 4th of the 2K = 4 candidates: not finished), row 1
  // is confident, so both new beams continue row 1.
  l = rows_of({{0, 0, 0, 0, 0, 0}, {-9, -9, -9, 9, -9, 8}});
  s.advance(1, l.data());
  CHECK(s.finished(0).empty());
  CHECK(s.source_rows() == std::vector<int64_t>{1, 1});
  CHECK(s.last_tokens() == std::vector<int64_t>{3, 5});
  // Step 2: eos is the best candidate of row 0: it finishes; the other beam goes on.
  l = rows_of({{-9, -9, 9, -9, -9, -9}, {-9, -9, -9, -9, 9, -9}});
  s.advance(2, l.data());
  REQUIRE(s.finished(0).size() == 1);
  CHECK(s.finished(0)[0].tokens == std::vector<int64_t>{4, 3, 2});
  CHECK_FALSE(s.done());
}

}  // namespace
}  // namespace longrun::models
