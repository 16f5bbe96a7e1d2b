// Unicode helpers the tokenizers need: strict UTF-8 decoding, general-category queries, full
// lowercase mapping and canonical decomposition (NFD). Tables are generated from Python's
// unicodedata by tools/dev/gen_unicode_tables.py (unicode_tables.inc); no ICU.
#pragma once

#include <string>
#include <string_view>

#include "longrun/status.h"

namespace longrun::text {

// The Unicode version of the generated tables ("14.0.0").
std::string_view unicode_version();

// Decodes UTF-8; rejects overlong forms, surrogates, code points > U+10FFFF and truncated
// sequences with an error naming the byte offset. `what` names the input in the message.
Status decode_utf8(std::string_view bytes, std::u32string* out, std::string_view what);
void append_utf8(char32_t cp, std::string* out);
std::string to_utf8(std::u32string_view s);

bool is_letter(char32_t cp);            // L*
bool is_number(char32_t cp);            // N*
bool is_nonspacing_mark(char32_t cp);   // Mn (as HF tokenizers strips accents)
bool is_other_control(char32_t cp);     // Cc, Cf, Co, Cs (what BERT's clean_text drops)
bool is_bert_punctuation(char32_t cp);  // P* (as HF tokenizers sees it) or ASCII punctuation
bool is_white_space(char32_t cp);       // the White_Space property (Rust char::is_whitespace, regex \s)
bool is_cjk_ideograph(char32_t cp);     // the CJK blocks BERT surrounds with spaces

// Appends the full lowercase mapping of `cp` (one or more code points).
void append_lowercase(char32_t cp, std::u32string* out);
// Canonical decomposition (NFD) of `s`, with canonical reordering of combining marks.
std::u32string nfd(std::u32string_view s);

}  // namespace longrun::text
