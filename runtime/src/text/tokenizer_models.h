// The two tokenisation models, applied to one segment of text that holds no added token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer_impl.h"

namespace longrun::text {

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
