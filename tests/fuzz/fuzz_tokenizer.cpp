// libFuzzer target for the tokenizers: arbitrary bytes as text, as ids and as metadata.
//
// Build (clang): see tools/dev/fuzz.sh (sources runtime/src/text/*.cpp and runtime/src/core/).
// The tokenizers come from tests/golden/tokenizer ($LONGRUN_TOKENIZER_DIR, default
// ../../../tests/golden/tokenizer: fuzz.sh runs targets in build/fuzz/<target>.work).
//
// The first byte picks what the rest is: text for one of four tokenizers (BERT uncased and
// cased, byte-level BPE with and without a prefix space), token ids for decode(), or a
// metadata string for from_metadata(). Properties checked: nothing crashes; valid UTF-8 always
// encodes and invalid UTF-8 is always refused with invalid_argument; every id is inside the
// vocabulary; byte-level BPE without a prefix space round-trips decode(encode(s)) == s (its
// vocabulary holds every byte, so it is lossless); an accepted metadata string re-serialises
// to a tokenizer that serialises identically.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "longrun/tokenizer.h"
#include "text/unicode.h"

namespace {

using fuzz_input::fail;

struct Tokenizers {
  std::vector<longrun::Tokenizer> all;
};

longrun::Tokenizer must(longrun::Result<longrun::Tokenizer> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", r.status().to_string().c_str());
    std::abort();
  }
  return std::move(r).value();
}

// The metadata with one field replaced by a JSON literal (cased / prefix-space variants).
longrun::Tokenizer variant(const longrun::Tokenizer& t, const std::string& field, const std::string& value) {
  std::string m = t.to_metadata();
  const std::string key = "\"" + field + "\":";
  const size_t at = m.find(key);
  const size_t end = m.find_first_of(",}", at);
  m.replace(at + key.size(), end - at - key.size(), value);
  return must(longrun::Tokenizer::from_metadata(m));
}

const Tokenizers& tokenizers() {
  static const Tokenizers t = [] {
    const char* env = std::getenv("LONGRUN_TOKENIZER_DIR");
    const std::string dir = env ? env : "../../../tests/golden/tokenizer";
    Tokenizers t;
    const longrun::Tokenizer bert = must(longrun::Tokenizer::from_directory(dir + "/bert"));
    const longrun::Tokenizer bpe = must(longrun::Tokenizer::from_directory(dir + "/bpe"));
    t.all = {bert, variant(variant(bert, "lowercase", "false"), "strip_accents", "false"), bpe,
             variant(bpe, "add_prefix_space", "true")};
    return t;
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace longrun;
  if (size == 0) return 0;
  const Tokenizers& toks = tokenizers();
  const uint8_t mode = data[0] % 6;
  // An exact-size heap copy so ASan sees reads past the end of the input.
  std::vector<char> copy(data + 1, data + size);
  const std::string_view rest(copy.data(), copy.size());
  if (mode < 4) {
    const Tokenizer& tok = toks.all[mode];
    std::u32string ignored;
    const bool valid = text::decode_utf8(rest, &ignored, "fuzz").ok();
    const auto ids = tok.encode(rest);
    if (ids.ok() != valid) fail();
    if (!ids.ok()) {
      if (ids.status().code() != StatusCode::invalid_argument) fail();
      return 0;
    }
    for (int64_t id : *ids)
      if (id < 0 || id >= tok.vocab_size()) fail();
    const auto text = tok.decode(*ids);
    if (!text.ok()) fail();
    if (mode == 2) {
      const auto plain = tok.encode(rest, /*add_special_tokens=*/false);
      if (!plain.ok()) fail();
      const auto back = tok.decode(*plain, /*skip_special_tokens=*/false);
      if (!back.ok() || *back != rest) fail();
    }
  } else if (mode == 4) {
    std::vector<int64_t> ids(rest.size() / 2);
    for (size_t i = 0; i < ids.size(); ++i)
      ids[i] = int64_t(uint8_t(rest[2 * i]) | (uint8_t(rest[2 * i + 1]) << 8)) - 512;
    for (const Tokenizer& tok : toks.all) {
      bool in_range = true;
      for (int64_t id : ids) in_range &= id >= 0 && id < tok.vocab_size();
      const auto text = tok.decode(ids, (size & 1) != 0);
      if (text.ok() != in_range) fail();
    }
  } else {
    const auto tok = Tokenizer::from_metadata(rest);
    if (tok.ok()) {
      const std::string again = tok->to_metadata();
      const auto reread = Tokenizer::from_metadata(again);
      if (!reread.ok() || reread->to_metadata() != again) fail();
      (void)tok->encode("Hello, world! [CLS] caf\xc3\xa9");
    }
  }
  return 0;
}
