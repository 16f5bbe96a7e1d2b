// Text tokenizers compatible with Hugging Face `tokenizers`: BERT WordPiece and GPT-2/RoBERTa/
// BART byte-level BPE, read from vocab.txt, vocab.json + merges.txt or tokenizer.json, and
// embedded in a native model file as a compact JSON string (metadata key "longrun.tokenizer").
//
// Every file is untrusted: vocabularies are checked for size, duplicate tokens and dense ids,
// merges for tokens outside the vocabulary, tokenizer.json for fields this implementation
// does not support (named in the error). encode() rejects invalid UTF-8 (HF accepts only
// valid Unicode strings, so there is nothing to match).
//
// Known differences from HF: code points unassigned in the Unicode version of our tables
// (runtime/src/text/unicode_tables.inc) but assigned in HF's newer data; truncation and
// padding settings of tokenizer.json are ignored (encode returns the whole sequence;
// encode_truncated cuts it to a length the caller gives).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "longrun/status.h"

namespace longrun {

enum class TokenizerModel { wordpiece, byte_level_bpe };

// The metadata key of a native model file that holds Tokenizer::to_metadata().
inline constexpr std::string_view kTokenizerMetadataKey = "longrun.tokenizer";

class Tokenizer {
 public:
  // Reads a Hugging Face tokenizer directory: tokenizer.json if present, else vocab.txt
  // (WordPiece) or vocab.json + merges.txt (byte-level BPE), with tokenizer_config.json
  // (do_lower_case, strip_accents, tokenize_chinese_chars, add_prefix_space) and
  // special_tokens_map.json (the special token strings) when present.
  static Result<Tokenizer> from_directory(const std::string& dir);
  // Reads one tokenizer.json file.
  static Result<Tokenizer> from_tokenizer_json(const std::string& path);
  // The compact serialisation to_metadata() writes (validated like a file).
  static Result<Tokenizer> from_metadata(std::string_view json);
  std::string to_metadata() const;

  // Token ids of a UTF-8 string; with add_special_tokens, the model's specials around it
  // ([CLS] ... [SEP] or <s> ... </s>). Special tokens written in the text are recognised.
  Result<std::vector<int64_t>> encode(std::string_view utf8, bool add_special_tokens = true) const;

  struct Truncated {
    std::vector<int64_t> ids;        // at most max_length ids
    int64_t untruncated_length = 0;  // what encode() gives; > ids.size() when tokens were cut
  };
  // encode(), then Hugging Face's truncation of one sequence (direction right): the text's
  // tokens are cut at the end so that they and the special tokens added around them
  // (add_special_tokens) are at most max_length ids; the special tokens are kept, e.g.
  // [CLS] t1 ... t(max_length-2) [SEP]. Errors: invalid_argument when max_length < 1 or
  // leaves no room for the special tokens (max_length < num_special_tokens()).
  Result<Truncated> encode_truncated(std::string_view utf8, int64_t max_length,
                                     bool add_special_tokens = true) const;
  // How many special tokens encode(text, true) adds around the text (2 for [CLS] ... [SEP]).
  int64_t num_special_tokens() const;
  // Text of token ids (WordPiece: "##" joined and HF's clean-up of spaces before punctuation;
  // byte-level: bytes back to UTF-8, invalid sequences replaced by U+FFFD as HF does).
  Result<std::string> decode(std::span<const int64_t> ids, bool skip_special_tokens = true) const;

  TokenizerModel model() const;
  int64_t vocab_size() const;
  std::optional<int64_t> token_to_id(std::string_view token) const;
  // The token of an id; empty when out of range.
  std::string_view id_to_token(int64_t id) const;
  std::optional<int64_t> pad_id() const;
  // One line: model, vocabulary size, normalisation options.
  std::string description() const;

  struct Impl;

 private:
  friend struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;  // immutable; copies share it
};

}  // namespace longrun
