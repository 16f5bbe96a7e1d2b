// The two tokenisation models, applied to one segment of text that holds no added token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer_impl.h"

namespace longrun::text {

// The ids of each distinct word already encoded in one encode() call: both models are a pure
// function of the word, and words repeat in any text, so a long text pays the model once per
// distinct word (HF tokenizers keeps such a cache too). Bounded: at most kMaxWords words of at
// most kMaxWordBytes bytes.
class WordCache {
 public:
  static constexpr size_t kMaxWords = size_t{1} << 16;
  static constexpr size_t kMaxWordBytes = 64;
  // The cached ids of `word` appended to *ids; false when it is not cached.
  bool lookup(const std::string& word, std::vector<int64_t>* ids) const {
    const auto it = map_.find(word);
    if (it == map_.end()) return false;
    ids->insert(ids->end(), it->second.begin(), it->second.end());
    return true;
  }
  // Caches ids[from, end) as the ids of `word` (when it fits the bounds).
  void store(const std::string& word, const std::vector<int64_t>& ids, size_t from) {
    if (word.size() <= kMaxWordBytes && map_.size() < kMaxWords)
      map_.emplace(word, std::vector<int64_t>(ids.begin() + ptrdiff_t(from), ids.end()));
  }

 private:
  std::unordered_map<std::string, std::vector<int64_t>> map_;
};

// BERT: BertNormalizer (clean text, CJK spacing, NFD accent stripping, lowercase), then
// BertPreTokenizer (split on whitespace, isolate punctuation), then greedy longest-match-first
// WordPiece with the continuation prefix; a word longer than max_input_chars_per_word or
// with an unmatched piece becomes the unknown token.
void encode_wordpiece(const Tokenizer::Impl& tok, std::u32string_view text, std::vector<int64_t>* ids);
std::string decode_wordpiece(const Tokenizer::Impl& tok, const std::vector<std::string_view>& tokens);

// GPT-2 / RoBERTa: ByteLevel pre-tokeniser (GPT-2 split pattern, bytes mapped to printable
// characters), then BPE merges by rank.
void encode_byte_level_bpe(const Tokenizer::Impl& tok, std::u32string_view text, std::vector<int64_t>* ids);
std::string decode_byte_level(const Tokenizer::Impl& tok, const std::vector<std::string_view>& tokens);
// GPT-2's bytes_to_unicode(): the printable code point standing for each byte.
char32_t byte_to_char(uint8_t b);

// Pieces [begin, end) of `s` as the GPT-2 pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// splits it (written by hand: the same alternatives in the same order).
std::vector<std::pair<size_t, size_t>> split_gpt2(std::u32string_view s);

}  // namespace longrun::text
