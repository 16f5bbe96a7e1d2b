// Unicode helpers the tokenizers need: strict UTF-8 decoding, general-category queries, full
// lowercase mapping and canonical decomposition (NFD). Tables are generated from Python's
// unicodedata by tools/dev/gen_unicode_tables.py (unicode_tables.inc); no ICU.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "longrun/status.h"

namespace longrun::text {

// The Unicode version of the generated tables ("14.0.0").
std::string_view unicode_version();

// Decodes UTF-8; rejects overlong forms, surrogates, code points > U+10FFFF and truncated
// sequences with an error naming the byte offset. `what` names the input in the message.
Status decode_utf8(std::string_view bytes, std::u32string* out, std::string_view what);
void append_utf8_multibyte(char32_t cp, std::string* out);  // cp >= 0x80
inline void append_utf8(char32_t cp, std::string* out) {
  if (cp < 0x80)
    out->push_back(char(cp));
  else
    append_utf8_multibyte(cp, out);
}
std::string to_utf8(std::u32string_view s);

namespace detail {
enum : uint8_t { kLetter = 1, kNumber = 2, kPunct = 4, kMn = 8, kOther = 16, kBertPunct = 32 };
// The category flags of U+0000..U+00FF, so the queries below cost a table load (inline) on
// Latin-1 text and a binary search of the generated ranges (category_flags) elsewhere.
extern const std::array<uint8_t, 256> kLatin1Flags;
uint8_t category_flags(char32_t cp);
inline uint8_t flags(char32_t cp) { return cp < 256 ? kLatin1Flags[cp] : category_flags(cp); }
}  // namespace detail

inline bool is_letter(char32_t cp) { return detail::flags(cp) & detail::kLetter; }  // L*
inline bool is_number(char32_t cp) { return detail::flags(cp) & detail::kNumber; }  // N*
// Mn (as HF tokenizers strips accents)
inline bool is_nonspacing_mark(char32_t cp) { return detail::flags(cp) & detail::kMn; }
// Cc, Cf, Co, Cs (what BERT's clean_text drops)
inline bool is_other_control(char32_t cp) { return detail::flags(cp) & detail::kOther; }
// P* (as HF tokenizers sees it) or ASCII punctuation
inline bool is_bert_punctuation(char32_t cp) { return detail::flags(cp) & detail::kBertPunct; }
// The White_Space property (Rust char::is_whitespace, regex \s).
inline bool is_white_space(char32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}
bool is_cjk_ideograph_above(char32_t cp);  // cp >= U+3400
// The CJK blocks BERT surrounds with spaces.
inline bool is_cjk_ideograph(char32_t cp) { return cp >= 0x3400 && is_cjk_ideograph_above(cp); }

// Appends the full lowercase mapping of `cp` (one or more code points).
void append_lowercase(char32_t cp, std::u32string* out);
// Canonical decomposition (NFD) of `s`, with canonical reordering of combining marks.
std::u32string nfd(std::u32string_view s);

}  // namespace longrun::text
