#include "strict_json.h"

#include "text/unicode.h"

namespace longrun::json {
namespace {

constexpr char kHex[] = "0123456789abcdef";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Characters that make up a "word" worth quoting whole in a message (numbers, literals).
bool is_word_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '+' ||
         c == '.' || c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1Fu, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0Fu, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07u, min = 0x10000;
    } else {
      return i;  // continuation byte without a lead, or 0xF8..0xFF
    }
    if (n - i < len) return i;
    for (size_t k = 1; k < len; ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

void append_quoted(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    } else {
      out->push_back(ch);
    }
  }
  out->push_back('"');
}

std::string quote_for_message(std::string_view s, size_t max_bytes) {
  size_t cut = s.size();
  if (cut > max_bytes) {
    cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  }
  std::string r = "'";
  for (size_t i = 0; i < cut; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      r += "\\x";
      r.push_back(kHex[c >> 4]);
      r.push_back(kHex[c & 15]);
    } else {
      r.push_back(char(c));
    }
  }
  if (cut < s.size()) r += "...";
  r += "'";
  return r;
}

void Cursor::skip_ws() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++pos_;
  }
}

bool Cursor::consume(char c) {
  skip_ws();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

char Cursor::peek() {
  skip_ws();
  return pos_ < text_.size() ? text_[pos_] : '\0';
}

std::string Cursor::describe_next() const {
  if (pos_ >= text_.size()) return "end of header";
  const std::string_view rest = text_.substr(pos_);
  size_t len = 1;
  if (rest[0] == '"') {  // a string literal: up to its closing quote
    while (len < rest.size() && rest[len] != '"' && rest[len] != '\\') ++len;
    if (len < rest.size()) ++len;
  } else if (is_word_char(rest[0])) {
    while (len < rest.size() && is_word_char(rest[len])) ++len;
  }
  return quote_for_message(rest.substr(0, len), 40);
}

Status Cursor::expected(std::string_view what) const {
  return format_error("expected " + std::string(what) + " at header byte " + std::to_string(pos_) +
                      ", found " + describe_next());
}

Status Cursor::read_string(std::string* out) {
  skip_ws();
  if (pos_ >= text_.size() || text_[pos_] != '"') return expected("a string");
  const size_t start = pos_++;
  out->clear();
  const auto unterminated = [&] {
    return format_error("unterminated string starting at header byte " + std::to_string(start));
  };
  for (;;) {
    if (pos_ >= text_.size()) return unterminated();
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return Status::ok_status();
    }
    if (c < 0x20)
      return format_error("raw control character \\x" + std::string{kHex[c >> 4], kHex[c & 15]} +
                          " inside a string at header byte " + std::to_string(pos_) +
                          " (JSON requires an escape)");
    if (c != '\\') {
      out->push_back(char(c));
      ++pos_;
      continue;
    }
    const size_t esc = pos_;
    if (pos_ + 1 >= text_.size()) return unterminated();
    const char e = text_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case '"': out->push_back('"'); continue;
      case '\\': out->push_back('\\'); continue;
      case '/': out->push_back('/'); continue;
      case 'b': out->push_back('\b'); continue;
      case 'f': out->push_back('\f'); continue;
      case 'n': out->push_back('\n'); continue;
      case 'r': out->push_back('\r'); continue;
      case 't': out->push_back('\t'); continue;
      case 'u': break;
      default:
        pos_ = esc;
        return format_error("invalid escape at header byte " + std::to_string(esc) + ": " +
                            quote_for_message(text_.substr(esc, 2)));
    }
    const auto read_hex4 = [&](uint32_t* v) {
      if (text_.size() - pos_ < 4) return false;
      uint32_t r = 0;
      for (int k = 0; k < 4; ++k) {
        const int h = hex_value(text_[pos_ + size_t(k)]);
        if (h < 0) return false;
        r = (r << 4) | uint32_t(h);
      }
      pos_ += 4;
      *v = r;
      return true;
    };
    uint32_t cp;
    if (!read_hex4(&cp))
      return format_error("invalid \\u escape at header byte " + std::to_string(esc) +
                          " (expected 4 hex digits)");
    if (cp >= 0xDC00 && cp <= 0xDFFF)
      return format_error("lone low surrogate \\u escape at header byte " + std::to_string(esc));
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t lo;
      if (text_.size() - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
        return format_error("lone high surrogate \\u escape at header byte " + std::to_string(esc));
      pos_ += 2;
      if (!read_hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF)
        return format_error("high surrogate \\u escape at header byte " + std::to_string(esc) +
                            " is not followed by a low surrogate");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    text::append_utf8(char32_t(cp), out);
  }
}

Status Cursor::read_uint(uint64_t max, uint64_t* out) {
  skip_ws();
  const size_t start = pos_;
  const auto refuse = [&](std::string_view why) {
    pos_ = start;
    return format_error("expected a plain non-negative integer" + std::string(why) + " at header byte " +
                        std::to_string(start) + ", found " + describe_next());
  };
  if (pos_ >= text_.size() || !is_digit(text_[pos_])) return refuse("");
  if (text_[pos_] == '0' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))
    return refuse(" (leading zeros are not JSON)");
  uint64_t v = 0;
  bool too_large = false;
  for (; pos_ < text_.size() && is_digit(text_[pos_]); ++pos_) {
    if (too_large) continue;  // keep scanning so the message shows the whole number
    too_large = __builtin_mul_overflow(v, uint64_t{10}, &v) ||
                __builtin_add_overflow(v, uint64_t(text_[pos_] - '0'), &v) || v > max;
  }
  if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
    return refuse(" (no fraction or exponent)");
  if (too_large) {
    pos_ = start;
    return format_error("integer " + describe_next() + " at header byte " + std::to_string(start) +
                        " exceeds the maximum " + std::to_string(max));
  }
  *out = v;
  return Status::ok_status();
}

}  // namespace longrun::json
