// GPT-2's byte-level pre-tokeniser and the BPE model, as HF tokenizers implements them.
#include <queue>
#include <string>

#include "text/tokenizer_models.h"
#include "text/unicode.h"

namespace longrun::text {
namespace {

enum class CharClass { letter, number, space, other };

CharClass classify(char32_t c) {
  if (is_white_space(c)) return CharClass::space;
  if (is_letter(c)) return CharClass::letter;
  if (is_number(c)) return CharClass::number;
  return CharClass::other;
}

// Length of the contraction ('s 't 're 've 'm 'll 'd) at s[i], or 0.
size_t contraction(std::u32string_view s, size_t i) {
  if (s[i] != '\'' || i + 1 >= s.size()) return 0;
  const char32_t a = s[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= s.size()) return 0;
  const char32_t b = s[i + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

struct Symbol {
  int64_t id;
  int64_t prev;
  int64_t next;
  bool alive;
};

struct Candidate {  // a possible merge of symbols[pos] with its right neighbour
  int32_t rank;
  int64_t pos;
  int64_t merged_id;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

uint64_t pair_key(int64_t a, int64_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

// BPE on one pre-token (its UTF-8 bytes): each byte starts as the token of its printable
// stand-in, then the lowest-ranked adjacent pair merges first (leftmost on ties), exactly
// the order of HF's Word::merge_all.
void bpe(const Tokenizer::Impl& tok, std::string_view bytes, std::vector<int64_t>* ids) {
  std::vector<Symbol> symbols;
  symbols.reserve(bytes.size());
  for (char b : bytes) {
    const int64_t id = tok.byte_token_id[uint8_t(b)];
    if (id < 0) continue;  // HF drops a character outside the vocabulary when there is no unknown token
    symbols.push_back({id, int64_t(symbols.size()) - 1, int64_t(symbols.size()) + 1, true});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push = [&](int64_t pos) {
    const int64_t next = symbols[size_t(pos)].next;
    if (next < 0) return;
    const auto m = tok.merges.find(pair_key(symbols[size_t(pos)].id, symbols[size_t(next)].id));
    if (m != tok.merges.end()) queue.push({m->second.first, pos, m->second.second});
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) push(int64_t(i));
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[size_t(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[size_t(left.next)];
    const auto m = tok.merges.find(pair_key(left.id, right.id));
    if (m == tok.merges.end() || m->second.second != top.merged_id) continue;  // stale
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[size_t(left.next)].prev = top.pos;
    if (left.prev >= 0) push(left.prev);
    push(top.pos);
  }
  for (const Symbol& s : symbols)
    if (s.alive) ids->push_back(s.id);
}

}  // namespace

char32_t byte_to_char(uint8_t b) {
  // Printable Latin-1 bytes stand for themselves; the others take 256, 257, ... in byte order.
  auto printable = [](unsigned v) {
    return (v >= 0x21 && v <= 0x7E) || (v >= 0xA1 && v <= 0xAC) || v >= 0xAE;
  };
  if (printable(b)) return b;
  char32_t n = 0;
  for (unsigned v = 0; v < b; ++v)
    if (!printable(v)) ++n;
  return 256 + n;
}

std::vector<std::pair<size_t, size_t>> split_gpt2(std::u32string_view s) {
  std::vector<std::pair<size_t, size_t>> pieces;
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    size_t end = i;
    if (const size_t c = contraction(s, i)) {
      end = i + c;
    } else {
      // ` ?\p{L}+ | ` ?\p{N}+ | ` ?[^\s\p{L}\p{N}]+`: one optional space, then a run of one class.
      const size_t k = s[i] == ' ' && i + 1 < n ? i + 1 : i;
      const CharClass cls = classify(s[k]);
      if (cls != CharClass::space) {
        end = k + 1;
        while (end < n && classify(s[end]) == cls) ++end;
      } else {
        // `\s+(?!\S)` leaves the last space of a run to the word that follows; `\s+` takes a
        // single space before a non-space.
        size_t j = i;
        while (j < n && is_white_space(s[j])) ++j;
        end = (j == n || j - i == 1) ? j : j - 1;
      }
    }
    pieces.emplace_back(i, end);
    i = end;
  }
  return pieces;
}

void encode_byte_level_bpe(const Tokenizer::Impl& tok, std::u32string_view text, std::vector<int64_t>* ids) {
  std::u32string buffer;
  if (tok.spec.add_prefix_space && (text.empty() || text.front() != ' ')) {
    buffer = U" ";
    buffer += text;
    text = buffer;
  }
  std::string utf8;
  WordCache cache;
  for (const auto& [begin, end] : split_gpt2(text)) {
    utf8.clear();
    for (size_t k = begin; k < end; ++k) append_utf8(text[k], &utf8);
    if (cache.lookup(utf8, ids)) continue;
    const size_t from = ids->size();
    bpe(tok, utf8, ids);
    cache.store(utf8, *ids, from);
  }
}

std::string decode_byte_level(const Tokenizer::Impl& tok, const std::vector<std::string_view>& tokens) {
  std::string bytes;
  std::u32string chars;
  for (std::string_view t : tokens) {
    std::string token_bytes;
    bool all_mapped = decode_utf8(t, &chars, "token").ok();
    for (size_t k = 0; all_mapped && k < chars.size(); ++k) {
      const auto it = tok.token_char_to_byte.find(chars[k]);
      if (it == tok.token_char_to_byte.end())
        all_mapped = false;
      else
        token_bytes.push_back(char(it->second));
    }
    bytes += all_mapped ? token_bytes : std::string(t);  // HF keeps such a token's own bytes
  }
  // Lossy UTF-8 decoding as Rust's String::from_utf8_lossy: each maximal invalid prefix
  // becomes one U+FFFD.
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const auto b0 = uint8_t(bytes[i]);
    if (b0 < 0x80) {
      out.push_back(char(b0));
      ++i;
      continue;
    }
    size_t need = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      need = 1;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      need = 2;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      need = 3;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    }
    size_t k = 1;
    bool valid = need > 0;
    for (; valid && k <= need; ++k) {
      if (i + k >= bytes.size()) {
        valid = false;
        break;
      }
      const auto b = uint8_t(bytes[i + k]);
      const bool in_range = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
      if (!in_range) {
        valid = false;
        break;
      }
    }
    if (valid) {
      out.append(bytes, i, need + 1);
      i += need + 1;
    } else {
      out += "\xEF\xBF\xBD";
      i += need > 0 ? k : 1;
    }
  }
  return out;
}

}  // namespace longrun::text
