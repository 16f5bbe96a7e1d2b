#include "text/unicode.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>

namespace longrun::text {
namespace {

struct CategoryRange {
  char32_t first;
  uint8_t flags;
};
struct CombiningClassRange {
  char32_t first;
  char32_t last;
  uint8_t ccc;
};
struct MappingEntry {
  char32_t cp;
  uint16_t offset;  // into the table's Data array
  uint8_t length;
};

#include "text/unicode_tables.inc"

constexpr uint8_t search_flags(char32_t cp) {
  const auto* it = std::upper_bound(std::begin(kCategoryRanges), std::end(kCategoryRanges), cp,
                                    [](char32_t c, const CategoryRange& r) { return c < r.first; });
  return it == std::begin(kCategoryRanges) ? 0 : std::prev(it)->flags;
}

uint8_t combining_class(char32_t cp) {
  if (cp < kCombiningClassRanges[0].first) return 0;
  const auto* it = std::upper_bound(std::begin(kCombiningClassRanges), std::end(kCombiningClassRanges), cp,
                                    [](char32_t c, const CombiningClassRange& r) { return c < r.first; });
  if (it == std::begin(kCombiningClassRanges)) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

template <size_t N>
const MappingEntry* find_mapping(const MappingEntry (&table)[N], char32_t cp) {
  const auto* it = std::lower_bound(std::begin(table), std::end(table), cp,
                                    [](const MappingEntry& e, char32_t c) { return e.cp < c; });
  return it != std::end(table) && it->cp == cp ? it : nullptr;
}

// Hangul syllables decompose algorithmically (Unicode §3.12).
constexpr char32_t kHangulBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kVCount = 21, kTCount = 28, kSCount = 11172;

}  // namespace

constexpr std::array<uint8_t, 256> kLatin1FlagsInit = [] {
  std::array<uint8_t, 256> a{};
  for (char32_t c = 0; c < 256; ++c) a[c] = search_flags(c);
  return a;
}();

namespace detail {
constinit const std::array<uint8_t, 256> kLatin1Flags = kLatin1FlagsInit;
uint8_t category_flags(char32_t cp) { return search_flags(cp); }
}  // namespace detail

std::string_view unicode_version() { return kUnicodeVersion; }

Status decode_utf8(std::string_view bytes, std::u32string* out, std::string_view what) {
  out->clear();
  out->reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    size_t len = 0;
    char32_t cp = 0, min = 0;
    if (b0 < 0x80) {
      out->push_back(b0);
      ++i;
      continue;
    } else if ((b0 & 0xE0) == 0xC0) {
      len = 2, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4, cp = b0 & 0x07, min = 0x10000;
    }
    bool ok = len != 0 && i + len <= bytes.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      ok = (b & 0xC0) == 0x80;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (!ok || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
      return invalid_argument(std::string(what) + ": invalid UTF-8 at byte " + std::to_string(i));
    out->push_back(cp);
    i += len;
  }
  return {};
}

void append_utf8_multibyte(char32_t cp, std::string* out) {
  if (cp < 0x800) {
    out->push_back(char(0xC0 | (cp >> 6)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(char(0xE0 | (cp >> 12)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(char(0xF0 | (cp >> 18)));
    out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(c, &out);
  return out;
}

bool is_cjk_ideograph_above(char32_t cp) {
  // HF tokenizers' ranges: BERT's, except that its Extension D/E range starts at U+2B920 where
  // BERT's starts at U+2B820 (we follow HF, whose ids we must match).
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

void append_lowercase(char32_t cp, std::u32string* out) {
  if (cp < 0x80) {
    out->push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    return;
  }
  const MappingEntry* m = find_mapping(kLowercase, cp);
  if (!m) {
    out->push_back(cp);
    return;
  }
  out->append(kLowercaseData + m->offset, m->length);
}

std::u32string nfd(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t cp : s) {
    if (cp < 0xC0) {
      out.push_back(cp);
    } else if (cp >= kHangulBase && cp < kHangulBase + kSCount) {
      const char32_t index = cp - kHangulBase;
      out.push_back(kLBase + index / (kVCount * kTCount));
      out.push_back(kVBase + (index % (kVCount * kTCount)) / kTCount);
      if (index % kTCount) out.push_back(kTBase + index % kTCount);
    } else if (const MappingEntry* m = find_mapping(kDecomposition, cp)) {
      out.append(kDecompositionData + m->offset, m->length);
    } else {
      out.push_back(cp);
    }
  }
  // Canonical ordering: stable sort of each run of nonzero combining classes.
  for (size_t i = 0; i < out.size();) {
    if (combining_class(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && combining_class(out[j]) != 0) ++j;
    std::stable_sort(out.begin() + i, out.begin() + j,
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  return out;
}

}  // namespace longrun::text
