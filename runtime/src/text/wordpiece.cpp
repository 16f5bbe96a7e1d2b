// BERT's normaliser, pre-tokeniser and WordPiece model, as HF tokenizers implements them.
#include <string>
#include <vector>

#include "text/tokenizer_models.h"
#include "text/unicode.h"

namespace longrun::text {
namespace {

// Accent stripping (NFD, then nonspacing marks dropped) and lowercasing of `run`, appended to
// *out.
void strip_and_lower(const TokenizerSpec& spec, std::u32string_view run, std::u32string* out) {
  std::u32string stripped;
  if (spec.strip_accents) {
    for (char32_t c : nfd(run))
      if (!is_nonspacing_mark(c)) stripped.push_back(c);
    run = stripped;
  }
  if (spec.lowercase)
    for (char32_t c : run) append_lowercase(c, out);
  else
    out->append(run);
}

// BertNormalizer: clean text, CJK spacing, accent stripping, lowercase, in HF's order. NFD,
// canonical reordering, mark removal and lowercasing act on each character or on runs of
// combining marks after one, and an ASCII character (no decomposition, combining class 0)
// ends such a run; so ASCII goes straight to the output and only the runs of non-ASCII
// characters between ASCII ones take the general path, with the same result as the whole
// text through each step in turn.
std::u32string bert_normalize(const TokenizerSpec& spec, std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size() + text.size() / 8);
  std::u32string pending;  // cleaned non-ASCII characters since the last ASCII one
  auto emit = [&](char32_t c) {
    if (c < 0x80) {
      if (!pending.empty()) {
        strip_and_lower(spec, pending, &out);
        pending.clear();
      }
      out.push_back(spec.lowercase && c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else {
      pending.push_back(c);
    }
  };
  for (char32_t c : text) {
    if (spec.clean_text) {
      // Control characters are tested first: VT, FF and NEL are dropped, not made spaces.
      const bool tab_or_newline = c == '\t' || c == '\n' || c == '\r';
      if (c == 0 || c == 0xFFFD || (!tab_or_newline && is_other_control(c))) continue;
      if (is_white_space(c)) c = ' ';
    }
    if (spec.handle_chinese_chars && is_cjk_ideograph(c)) {
      emit(' ');
      emit(c);
      emit(' ');
    } else {
      emit(c);
    }
  }
  if (!pending.empty()) strip_and_lower(spec, pending, &out);
  return out;
}

// Buffers encode_word reuses from word to word.
struct WordScratch {
  std::string utf8;
  std::vector<size_t> offset;
  WordCache cache;
};

void encode_word(const Tokenizer::Impl& tok, std::u32string_view word, int64_t unk, WordScratch& scratch,
                 std::vector<int64_t>* ids) {
  const TokenizerSpec& spec = tok.spec;
  if (int64_t(word.size()) > spec.max_input_chars_per_word) {
    ids->push_back(unk);
    return;
  }
  const size_t mark = ids->size();
  // UTF-8 of the word and the byte offset of each character, so a candidate piece is a slice.
  std::string& utf8 = scratch.utf8;
  std::vector<size_t>& offset = scratch.offset;
  utf8.clear();
  offset.resize(word.size() + 1);
  for (size_t k = 0; k < word.size(); ++k) {
    offset[k] = utf8.size();
    append_utf8(word[k], &utf8);
  }
  offset[word.size()] = utf8.size();
  if (scratch.cache.lookup(utf8, ids)) return;
  for (size_t start = 0; start < word.size();) {
    // A piece longer than every vocabulary token matches nothing: start from the longest that
    // fits (the same first match as trying from the word's end).
    const size_t prefix = start > 0 ? spec.continuing_subword_prefix.size() : 0;
    const size_t budget = tok.max_token_bytes > prefix ? tok.max_token_bytes - prefix : 0;
    size_t end = word.size();
    while (end > start && offset[end] - offset[start] > budget) --end;
    int64_t found = -1;
    const std::string_view prefix_text =
        start > 0 ? std::string_view(spec.continuing_subword_prefix) : std::string_view();
    for (; end > start; --end) {
      found = tok.find_piece(prefix_text,
                             std::string_view(utf8).substr(offset[start], offset[end] - offset[start]));
      if (found >= 0) break;
    }
    if (found < 0) {  // no piece matches: the whole word is unknown
      ids->resize(mark);
      ids->push_back(unk);
      break;
    }
    ids->push_back(found);
    start = end;
  }
  scratch.cache.store(utf8, *ids, mark);
}

// HF's WordPiece decoder clean-up (applied to each token after its joining space).
void cleanup(std::string* s) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    for (size_t pos = s->find(from); pos != std::string::npos; pos = s->find(from, pos + to.size()))
      s->replace(pos, from.size(), to);
  }
}

}  // namespace

void encode_wordpiece(const Tokenizer::Impl& tok, std::u32string_view text, std::vector<int64_t>* ids) {
  const std::u32string norm = bert_normalize(tok.spec, text);
  const int64_t unk = tok.ids.at(tok.spec.unk_token);
  WordScratch scratch;
  size_t word_start = 0;
  auto flush = [&](size_t end) {
    if (end > word_start)
      encode_word(tok, std::u32string_view(norm).substr(word_start, end - word_start), unk, scratch, ids);
  };
  for (size_t i = 0; i < norm.size(); ++i) {
    const char32_t c = norm[i];
    if (is_white_space(c)) {
      flush(i);
      word_start = i + 1;
    } else if (is_bert_punctuation(c)) {
      flush(i);
      encode_word(tok, std::u32string_view(norm).substr(i, 1), unk, scratch, ids);
      word_start = i + 1;
    }
  }
  flush(norm.size());
}

std::string decode_wordpiece(const Tokenizer::Impl& tok, const std::vector<std::string_view>& tokens) {
  const std::string& prefix = tok.spec.continuing_subword_prefix;
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string t(tokens[i]);
    if (i != 0) {
      if (!prefix.empty() && t.starts_with(prefix))
        t.erase(0, prefix.size());
      else
        t.insert(t.begin(), ' ');
    }
    cleanup(&t);
    out += t;
  }
  return out;
}

}  // namespace longrun::text
