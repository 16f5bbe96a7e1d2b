// A strict, schema-driven JSON reader for untrusted headers (safetensors), plus the UTF-8
// and string-escaping helpers the writer shares.
//
// There is no DOM and no recursion: the caller walks the grammar it expects (object ->
// key -> value) with the cursor below, so nesting depth is whatever the caller's schema
// allows and nothing is allocated except the strings it asks for. Integers are parsed
// exactly as plain non-negative decimal (no sign, fraction, exponent or leading zeros);
// everything outside RFC 8259 is refused. Error Statuses carry no context; callers add the
// file, tensor and field with Status::with_context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "longrun/status.h"

namespace longrun::json {

// Byte offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF); npos when `s` is valid.
size_t find_invalid_utf8(std::string_view s);

// Appends `s` as a JSON string literal (quotes included): '"' and '\\' are escaped, control
// characters become \u00XX, everything else is copied (the caller guarantees UTF-8).
void append_quoted(std::string* out, std::string_view s);

// `s` quoted for an error message: at most `max_bytes` (cut on a character boundary, "..."
// appended), non-printable ASCII bytes shown as \xNN.
std::string quote_for_message(std::string_view s, size_t max_bytes = 120);

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  // Skips JSON whitespace (space, tab, LF, CR).
  void skip_ws();
  // After whitespace: consumes `c` if it is next.
  bool consume(char c);
  // After whitespace: the next byte, or '\0' at the end.
  char peek();
  bool at_end() const { return pos_ >= text_.size(); }
  size_t pos() const { return pos_; }

  // After whitespace: a string literal, escapes decoded (\uXXXX surrogate pairs combined;
  // lone surrogates and raw control characters refused).
  Status read_string(std::string* out);
  // After whitespace: a plain non-negative decimal integer <= max.
  Status read_uint(uint64_t max, uint64_t* out);

  // What is next, for messages: "'1.0'", "'['", "end of header".
  std::string describe_next() const;
  // "expected <what> at header byte P, found <describe_next()>".
  Status expected(std::string_view what) const;

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace longrun::json
