// What a Tokenizer is made of: the TokenizerSpec every source (vocab files, tokenizer.json,
// model-file metadata) is parsed into, and the lookup structures built from it once.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "longrun/text_file.h"
#include "longrun/tokenizer.h"

namespace longrun::text {

// A token matched verbatim in the raw text before normalisation ([CLS], <mask>, ...).
struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool special = true;  // skipped by decode(skip_special_tokens)
  bool lstrip = false;  // the match swallows whitespace on its left
  bool rstrip = false;  // ... and on its right
};

struct TokenizerSpec {
  TokenizerModel model = TokenizerModel::wordpiece;
  std::vector<std::string> vocab;                           // token of each id, ids dense from 0
  std::vector<std::pair<std::string, std::string>> merges;  // BPE merges by rank
  std::string unk_token;  // WordPiece: required; byte-level BPE: optional ("" = none)
  // WordPiece model.
  std::string continuing_subword_prefix = "##";
  int64_t max_input_chars_per_word = 100;
  // BERT normaliser (WordPiece only).
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;
  bool lowercase = true;
  // Byte-level pre-tokeniser.
  bool add_prefix_space = false;
  // Post-processor: ids around the sequence when add_special_tokens.
  std::vector<int64_t> prefix_ids;
  std::vector<int64_t> suffix_ids;
  std::vector<AddedToken> added_tokens;
};

// Limits on untrusted vocabularies (far above any real tokenizer).
inline constexpr size_t kMaxVocabSize = 4'000'000;
inline constexpr size_t kMaxTokenBytes = 1024;
inline constexpr size_t kMaxMerges = 4'000'000;

// Validates a spec and builds a tokenizer from it; `source` names it in errors.
Result<Tokenizer> build_tokenizer(TokenizerSpec spec, std::string_view source);

// Sources.
Result<TokenizerSpec> parse_tokenizer_json(std::string_view text, std::string_view source);
Result<TokenizerSpec> parse_tokenizer_metadata(std::string_view text);
std::string write_tokenizer_metadata(const TokenizerSpec& spec);
Result<TokenizerSpec> read_vocab_directory(const std::string& dir);

}  // namespace longrun::text

namespace longrun {

struct Tokenizer::Impl {
  text::TokenizerSpec spec;
  std::unordered_map<std::string, int64_t> ids;  // token -> id
  size_t max_token_bytes = 0;                    // the longest token: WordPiece tries no longer piece
  // WordPiece's lookup of candidate pieces: open addressing (linear probing) over spec.vocab,
  // keyed by piece_hash, so a lookup costs one probe of a flat array and one comparison
  // instead of a node chain, and a continuation piece is hashed without concatenating "##".
  struct PieceSlot {
    uint32_t id_plus_1 = 0;  // 0 = empty
    uint32_t tag = 0;        // the hash's high half, to skip most comparisons
  };
  std::vector<PieceSlot> piece_slots;  // power-of-two size, at most half full
  // FNV-1a of the bytes of a then b (the hash of their concatenation).
  static uint64_t piece_hash(std::string_view a, std::string_view b) {
    uint64_t h = 1469598103934665603ull;
    for (char c : a) h = (h ^ uint8_t(c)) * 1099511628211ull;
    for (char c : b) h = (h ^ uint8_t(c)) * 1099511628211ull;
    return h;
  }
  // The id of the token prefix + body, or -1.
  int64_t find_piece(std::string_view prefix, std::string_view body) const {
    const uint64_t h = piece_hash(prefix, body);
    const size_t mask = piece_slots.size() - 1;
    for (size_t i = size_t(h) & mask;; i = (i + 1) & mask) {
      const PieceSlot& s = piece_slots[i];
      if (s.id_plus_1 == 0) return -1;
      if (s.tag != uint32_t(h >> 32)) continue;
      const std::string& t = spec.vocab[s.id_plus_1 - 1];
      if (t.size() == prefix.size() + body.size() && std::string_view(t).substr(0, prefix.size()) == prefix &&
          std::string_view(t).substr(prefix.size()) == body)
        return int64_t(s.id_plus_1) - 1;
    }
  }
  // Byte-level BPE: merge of the pair (left id, right id) -> (rank, merged id).
  std::unordered_map<uint64_t, std::pair<int32_t, int64_t>> merges;
  std::array<std::string, 256> byte_to_token;  // GPT-2's printable stand-in of each byte, UTF-8
  std::array<int64_t, 256> byte_token_id{};    // its id; the unknown token's or -1 when absent
  std::unordered_map<char32_t, uint8_t> token_char_to_byte;
  std::vector<bool> is_special;            // by id
  std::vector<std::u32string> added_text;  // spec.added_tokens[k].content decoded
  // Whether some added token starts with this ASCII character / with a non-ASCII one: encode
  // tries the added tokens only at such positions.
  std::array<bool, 128> added_starts_ascii{};
  bool added_starts_non_ascii = false;

  static Tokenizer wrap(std::shared_ptr<const Impl> impl) { return Tokenizer(std::move(impl)); }
};

}  // namespace longrun
