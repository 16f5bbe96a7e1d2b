// Tokenizer: validation of a spec, added-token splitting, special tokens, encode and decode.
#include "longrun/tokenizer.h"

#include <sys/stat.h>

#include <algorithm>

#include "text/tokenizer_impl.h"
#include "text/tokenizer_models.h"
#include "text/unicode.h"

namespace longrun {
namespace text {
namespace {

Status check_token(const std::string& token, std::string_view what) {
  if (token.empty()) return format_error(std::string(what) + ": empty token");
  if (token.size() > kMaxTokenBytes)
    return format_error(std::string(what) + ": token of " + std::to_string(token.size()) +
                        " bytes (at most " + std::to_string(kMaxTokenBytes) + ")");
  std::u32string ignored;
  return decode_utf8(token, &ignored, what);
}

}  // namespace

Result<Tokenizer> build_tokenizer(TokenizerSpec spec, std::string_view source) {
  const std::string where(source);
  auto impl = std::make_shared<Tokenizer::Impl>();
  if (spec.vocab.empty()) return format_error(where + ": empty vocabulary");
  if (spec.vocab.size() > kMaxVocabSize)
    return format_error(where + ": vocabulary of " + std::to_string(spec.vocab.size()) + " tokens (at most " +
                        std::to_string(kMaxVocabSize) + ")");
  impl->ids.reserve(spec.vocab.size());
  for (size_t id = 0; id < spec.vocab.size(); ++id) {
    const std::string& t = spec.vocab[id];
    LR_RETURN_IF_ERROR(check_token(t, where + ": vocabulary id " + std::to_string(id)));
    const auto [it, inserted] = impl->ids.emplace(t, int64_t(id));
    impl->max_token_bytes = std::max(impl->max_token_bytes, t.size());
    if (!inserted)
      return format_error(where + ": token '" + t + "' appears twice in the vocabulary (ids " +
                          std::to_string(it->second) + " and " + std::to_string(id) + ")");
  }
  const auto vocab_size = int64_t(spec.vocab.size());
  auto check_id = [&](int64_t id, std::string_view what) -> Status {
    if (id < 0 || id >= vocab_size)
      return out_of_range(where + ": " + std::string(what) + " id " + std::to_string(id) +
                          " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
    return {};
  };
  for (int64_t id : spec.prefix_ids) LR_RETURN_IF_ERROR(check_id(id, "post-processor"));
  for (int64_t id : spec.suffix_ids) LR_RETURN_IF_ERROR(check_id(id, "post-processor"));
  impl->is_special.assign(spec.vocab.size(), false);
  for (const AddedToken& a : spec.added_tokens) {
    LR_RETURN_IF_ERROR(check_id(a.id, "added token '" + a.content + "'"));
    if (spec.vocab[size_t(a.id)] != a.content)
      return format_error(where + ": added token '" + a.content + "' has id " + std::to_string(a.id) +
                          ", which the vocabulary gives to '" + spec.vocab[size_t(a.id)] + "'");
    if (a.special) impl->is_special[size_t(a.id)] = true;
    impl->added_text.emplace_back();
    LR_RETURN_IF_ERROR(decode_utf8(a.content, &impl->added_text.back(), "added token"));
    const char32_t first = impl->added_text.back().front();  // check_token: not empty
    if (first < 128)
      impl->added_starts_ascii[first] = true;
    else
      impl->added_starts_non_ascii = true;
  }
  for (int64_t id : spec.prefix_ids) impl->is_special[size_t(id)] = true;
  for (int64_t id : spec.suffix_ids) impl->is_special[size_t(id)] = true;
  if (spec.model == TokenizerModel::wordpiece) {
    if (!impl->ids.contains(spec.unk_token))
      return format_error(where + ": the unknown token '" + spec.unk_token + "' is not in the vocabulary");
    if (spec.max_input_chars_per_word < 1 || spec.max_input_chars_per_word > 1'000'000)
      return format_error(where + ": max_input_chars_per_word must be in [1, 1000000], found " +
                          std::to_string(spec.max_input_chars_per_word));
    if (!spec.merges.empty()) return format_error(where + ": a WordPiece tokenizer has no merges");
    size_t slots = 16;
    while (slots < 2 * spec.vocab.size()) slots *= 2;  // kMaxVocabSize bounds it
    impl->piece_slots.assign(slots, {});
    for (size_t id = 0; id < spec.vocab.size(); ++id) {
      const uint64_t h = Tokenizer::Impl::piece_hash(spec.vocab[id], {});
      size_t i = size_t(h) & (slots - 1);
      while (impl->piece_slots[i].id_plus_1 != 0) i = (i + 1) & (slots - 1);
      impl->piece_slots[i] = {uint32_t(id + 1), uint32_t(h >> 32)};
    }
  } else {
    if (!spec.unk_token.empty() && !impl->ids.contains(spec.unk_token))
      return format_error(where + ": the unknown token '" + spec.unk_token + "' is not in the vocabulary");
    if (spec.merges.size() > kMaxMerges)
      return format_error(where + ": " + std::to_string(spec.merges.size()) + " merges (at most " +
                          std::to_string(kMaxMerges) + ")");
    if (spec.vocab.size() > size_t(INT32_MAX)) return format_error(where + ": vocabulary too large for BPE");
    impl->merges.reserve(spec.merges.size());
    for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
      const auto& [a, b] = spec.merges[rank];
      const std::string what = where + ": merge " + std::to_string(rank) + " ('" + a + " " + b + "')";
      const auto ia = impl->ids.find(a), ib = impl->ids.find(b), iab = impl->ids.find(a + b);
      if (ia == impl->ids.end() || ib == impl->ids.end())
        return format_error(what + ": a part is not in the vocabulary");
      if (iab == impl->ids.end()) return format_error(what + ": the merged token is not in the vocabulary");
      // A pair listed twice keeps its first (lowest) rank, as HF does.
      impl->merges.emplace((uint64_t(uint32_t(ia->second)) << 32) | uint32_t(ib->second),
                           std::pair<int32_t, int64_t>(int32_t(rank), iab->second));
    }
    for (unsigned b = 0; b < 256; ++b) {
      const char32_t c = byte_to_char(uint8_t(b));
      append_utf8(c, &impl->byte_to_token[b]);
      impl->token_char_to_byte[c] = uint8_t(b);
      const auto it = impl->ids.find(impl->byte_to_token[b]);
      impl->byte_token_id[b] = it != impl->ids.end()    ? it->second
                               : spec.unk_token.empty() ? -1
                                                        : impl->ids.at(spec.unk_token);
    }
  }
  impl->spec = std::move(spec);
  return Tokenizer::Impl::wrap(std::move(impl));
}

}  // namespace text

namespace {

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

Result<Tokenizer> Tokenizer::from_tokenizer_json(const std::string& path) {
  LR_ASSIGN_OR_RETURN(std::string text, read_text_file(path, size_t{512} << 20));
  LR_ASSIGN_OR_RETURN(text::TokenizerSpec spec, text::parse_tokenizer_json(text, path));
  return text::build_tokenizer(std::move(spec), path);
}

Result<Tokenizer> Tokenizer::from_directory(const std::string& dir) {
  const std::string json = dir + "/tokenizer.json";
  if (file_exists(json)) return from_tokenizer_json(json);
  LR_ASSIGN_OR_RETURN(text::TokenizerSpec spec, text::read_vocab_directory(dir));
  return text::build_tokenizer(std::move(spec), dir);
}

Result<Tokenizer> Tokenizer::from_metadata(std::string_view json) {
  LR_ASSIGN_OR_RETURN(text::TokenizerSpec spec, text::parse_tokenizer_metadata(json));
  return text::build_tokenizer(std::move(spec),
                               std::string("metadata '") + std::string(kTokenizerMetadataKey) + "'");
}

std::string Tokenizer::to_metadata() const { return text::write_tokenizer_metadata(impl_->spec); }

Result<std::vector<int64_t>> Tokenizer::encode(std::string_view utf8, bool add_special_tokens) const {
  const text::TokenizerSpec& spec = impl_->spec;
  std::u32string input;
  LR_RETURN_IF_ERROR(text::decode_utf8(utf8, &input, "tokenizer input"));
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = spec.prefix_ids;
  auto encode_segment = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    const std::u32string_view segment = std::u32string_view(input).substr(begin, end - begin);
    if (spec.model == TokenizerModel::wordpiece)
      text::encode_wordpiece(*impl_, segment, &ids);
    else
      text::encode_byte_level_bpe(*impl_, segment, &ids);
  };
  // Added tokens are found leftmost-longest in the raw text; the text between them is encoded
  // by the model.
  const std::vector<std::u32string>& added = impl_->added_text;
  size_t segment_begin = 0;
  for (size_t i = 0; i < input.size();) {
    if (input[i] < 128 ? !impl_->added_starts_ascii[input[i]] : !impl_->added_starts_non_ascii) {
      ++i;
      continue;
    }
    int best = -1;
    for (size_t k = 0; k < added.size(); ++k) {
      if (added[k].size() > input.size() - i || (best >= 0 && added[k].size() <= added[size_t(best)].size()))
        continue;
      if (std::u32string_view(input).substr(i, added[k].size()) == added[k]) best = int(k);
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const text::AddedToken& a = spec.added_tokens[size_t(best)];
    size_t begin = i, end = i + added[size_t(best)].size();
    if (a.lstrip)
      while (begin > segment_begin && text::is_white_space(input[begin - 1])) --begin;
    if (a.rstrip)
      while (end < input.size() && text::is_white_space(input[end])) ++end;
    encode_segment(segment_begin, begin);
    ids.push_back(a.id);
    segment_begin = i = end;
  }
  encode_segment(segment_begin, input.size());
  if (add_special_tokens) ids.insert(ids.end(), spec.suffix_ids.begin(), spec.suffix_ids.end());
  return ids;
}

int64_t Tokenizer::num_special_tokens() const {
  return int64_t(impl_->spec.prefix_ids.size() + impl_->spec.suffix_ids.size());
}

Result<Tokenizer::Truncated> Tokenizer::encode_truncated(std::string_view utf8, int64_t max_length,
                                                         bool add_special_tokens) const {
  const int64_t specials = add_special_tokens ? num_special_tokens() : 0;
  if (max_length < 1 || max_length < specials)
    return invalid_argument(
        "truncation: max_length " + std::to_string(max_length) + " leaves no room for " +
        (specials > 0 ? "the " + std::to_string(specials) + " special tokens" : "a token"));
  LR_ASSIGN_OR_RETURN(std::vector<int64_t> ids, encode(utf8, add_special_tokens));
  Truncated t;
  t.untruncated_length = int64_t(ids.size());
  if (t.untruncated_length > max_length) {
    // Drop text tokens from the end, before the suffix specials.
    const size_t suffix = add_special_tokens ? impl_->spec.suffix_ids.size() : 0;
    const size_t cut = size_t(t.untruncated_length - max_length);
    ids.erase(ids.end() - ptrdiff_t(suffix + cut), ids.end() - ptrdiff_t(suffix));
  }
  t.ids = std::move(ids);
  return t;
}

Result<std::string> Tokenizer::decode(std::span<const int64_t> ids, bool skip_special_tokens) const {
  std::vector<std::string_view> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= vocab_size())
      return out_of_range("decode: id " + std::to_string(id) + " at position " + std::to_string(i) +
                          " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    if (skip_special_tokens && impl_->is_special[size_t(id)]) continue;
    tokens.push_back(impl_->spec.vocab[size_t(id)]);
  }
  return impl_->spec.model == TokenizerModel::wordpiece ? text::decode_wordpiece(*impl_, tokens)
                                                        : text::decode_byte_level(*impl_, tokens);
}

TokenizerModel Tokenizer::model() const { return impl_->spec.model; }
int64_t Tokenizer::vocab_size() const { return int64_t(impl_->spec.vocab.size()); }

std::optional<int64_t> Tokenizer::token_to_id(std::string_view token) const {
  const auto it = impl_->ids.find(std::string(token));
  if (it == impl_->ids.end()) return std::nullopt;
  return it->second;
}

std::string_view Tokenizer::id_to_token(int64_t id) const {
  return id >= 0 && id < vocab_size() ? std::string_view(impl_->spec.vocab[size_t(id)]) : std::string_view();
}

std::optional<int64_t> Tokenizer::pad_id() const {
  for (const char* pad : {"[PAD]", "<pad>"})
    if (auto id = token_to_id(pad)) return id;
  return std::nullopt;
}

std::string Tokenizer::description() const {
  const text::TokenizerSpec& s = impl_->spec;
  std::string d = s.model == TokenizerModel::wordpiece ? "WordPiece" : "byte-level BPE";
  d += ", " + std::to_string(s.vocab.size()) + " tokens";
  if (s.model == TokenizerModel::wordpiece) {
    d += s.lowercase ? ", lowercase" : ", cased";
    if (s.strip_accents) d += ", strip accents";
  } else {
    d += ", " + std::to_string(s.merges.size()) + " merges";
    if (s.add_prefix_space) d += ", prefix space";
  }
  return d;
}

}  // namespace longrun
