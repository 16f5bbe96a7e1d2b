// tokenizer.json (the Hugging Face `tokenizers` serialisation) for BERT WordPiece and
// byte-level BPE tokenizers. Fields we do not implement are refused by name rather than
// silently giving different ids.
#include <algorithm>

#include "text/json_fields.h"
#include "text/tokenizer_impl.h"

namespace longrun::text {
namespace {

Status refuse(std::string_view source, std::string_view field, std::string_view found) {
  return unsupported(std::string(source) + ": " + std::string(field) + " = " + std::string(found) +
                     " is not supported (supported: BERT WordPiece and byte-level BPE tokenizers)");
}

std::string type_of(const Json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
}

Status read_model(const Json& model, std::string_view src, TokenizerSpec* spec) {
  const std::string where = std::string(src) + ": model";
  std::string type = type_of(model);
  if (type.empty() && model.is_object()) type = model.contains("merges") ? "BPE" : "WordPiece";
  if (!model.is_object() || !model.contains("vocab"))
    return format_error(where + ": expected an object with a vocab");
  LR_ASSIGN_OR_RETURN(spec->vocab, read_vocab_object(model["vocab"], where + ".vocab"));
  if (type == "WordPiece") {
    spec->model = TokenizerModel::wordpiece;
    LR_RETURN_IF_ERROR(read_field(model, "unk_token", where, &spec->unk_token));
    LR_RETURN_IF_ERROR(
        read_field(model, "continuing_subword_prefix", where, &spec->continuing_subword_prefix));
    LR_RETURN_IF_ERROR(read_field(model, "max_input_chars_per_word", where, &spec->max_input_chars_per_word));
    return {};
  }
  if (type != "BPE") return refuse(src, "model.type", "'" + type + "'");
  spec->model = TokenizerModel::byte_level_bpe;
  spec->unk_token.clear();
  LR_RETURN_IF_ERROR(read_field(model, "unk_token", where, &spec->unk_token));
  for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto it = model.find(key);
    if (it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      return refuse(src, "model." + std::string(key), it->dump());
  }
  for (const char* key : {"byte_fallback", "ignore_merges", "fuse_unk"}) {
    bool on = false;
    LR_RETURN_IF_ERROR(read_field(model, key, where, &on));
    if (on && !(std::string_view(key) == "fuse_unk" && spec->unk_token.empty()))
      return refuse(src, "model." + std::string(key), "true");
  }
  const auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) return format_error(where + ".merges: expected an array");
  if (merges->size() > kMaxMerges)
    return format_error(where + ".merges: " + std::to_string(merges->size()) + " merges (at most " +
                        std::to_string(kMaxMerges) + ")");
  for (size_t r = 0; r < merges->size(); ++r) {
    const Json& m = (*merges)[r];
    // Older files write "a b", newer ones ["a", "b"].
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        return format_error(where + ".merges[" + std::to_string(r) + "]: expected 'a b', found '" + s + "'");
      spec->merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec->merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return format_error(where + ".merges[" + std::to_string(r) + "]: expected 'a b' or [a, b], found " +
                          m.dump());
    }
  }
  return {};
}

Status read_normalizer(const Json& j, std::string_view src, TokenizerSpec* spec) {
  spec->clean_text = spec->handle_chinese_chars = spec->strip_accents = spec->lowercase = false;
  if (j.is_null()) return {};
  if (type_of(j) != "BertNormalizer") return refuse(src, "normalizer.type", "'" + type_of(j) + "'");
  const std::string where = std::string(src) + ": normalizer";
  spec->clean_text = spec->handle_chinese_chars = spec->lowercase = true;
  LR_RETURN_IF_ERROR(read_field(j, "clean_text", where, &spec->clean_text));
  LR_RETURN_IF_ERROR(read_field(j, "handle_chinese_chars", where, &spec->handle_chinese_chars));
  LR_RETURN_IF_ERROR(read_field(j, "lowercase", where, &spec->lowercase));
  spec->strip_accents = spec->lowercase;  // null follows lowercase
  return read_field(j, "strip_accents", where, &spec->strip_accents);
}

Status read_pre_tokenizer(const Json& j, std::string_view src, TokenizerSpec* spec) {
  const std::string type = type_of(j);
  if (spec->model == TokenizerModel::wordpiece) {
    if (type != "BertPreTokenizer")
      return refuse(src, "pre_tokenizer.type", "'" + type + "' (with WordPiece)");
    return {};
  }
  if (type != "ByteLevel") return refuse(src, "pre_tokenizer.type", "'" + type + "' (with BPE)");
  const std::string where = std::string(src) + ": pre_tokenizer";
  bool use_regex = true;
  LR_RETURN_IF_ERROR(read_field(j, "use_regex", where, &use_regex));
  if (!use_regex) return refuse(src, "pre_tokenizer.use_regex", "false");
  return read_field(j, "add_prefix_space", where, &spec->add_prefix_space);
}

Result<int64_t> special_id(const Json& pair, std::string_view field) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_number_integer())
    return format_error(std::string(field) + ": expected [token, id], found " + pair.dump());
  return pair[1].get<int64_t>();
}

Status read_post_processor(const Json& j, std::string_view src, TokenizerSpec* spec) {
  if (j.is_null()) return {};
  const std::string type = type_of(j);
  const std::string where = std::string(src) + ": post_processor";
  if (type == "ByteLevel") return {};  // only trims offsets
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    LR_ASSIGN_OR_RETURN(int64_t cls, special_id(j.value("cls", Json()), where + ".cls"));
    LR_ASSIGN_OR_RETURN(int64_t sep, special_id(j.value("sep", Json()), where + ".sep"));
    spec->prefix_ids = {cls};
    spec->suffix_ids = {sep};
    return {};
  }
  if (type != "TemplateProcessing") return refuse(src, "post_processor.type", "'" + type + "'");
  const Json single = j.value("single", Json());
  const Json specials = j.value("special_tokens", Json());
  if (!single.is_array() || !specials.is_object())
    return format_error(where + ": expected 'single' (array) and 'special_tokens' (object)");
  bool seen_sequence = false;
  for (const Json& piece : single) {
    if (piece.is_object() && piece.contains("Sequence")) {
      if (seen_sequence) return refuse(src, "post_processor.single", "a template with two sequences");
      seen_sequence = true;
      continue;
    }
    if (!piece.is_object() || !piece.contains("SpecialToken") || !piece["SpecialToken"].is_object() ||
        !piece["SpecialToken"].contains("id") || !piece["SpecialToken"]["id"].is_string())
      return format_error(
          where + ".single: expected {\"SpecialToken\": {\"id\": ...}} or {\"Sequence\": ...}, found " +
          piece.dump());
    const std::string name = piece["SpecialToken"]["id"].get<std::string>();
    const Json entry = specials.value(name, Json());
    if (!entry.is_object() || !entry.contains("ids") || !entry["ids"].is_array())
      return format_error(where + ".special_tokens: no ids for '" + name + "'");
    for (const Json& id : entry["ids"]) {
      if (!id.is_number_integer())
        return format_error(where + ".special_tokens['" + name + "'].ids: expected integers");
      (seen_sequence ? spec->suffix_ids : spec->prefix_ids).push_back(id.get<int64_t>());
    }
  }
  if (!seen_sequence) return format_error(where + ".single: the template has no sequence");
  return {};
}

Status read_added_tokens(const Json& j, std::string_view src, TokenizerSpec* spec) {
  if (j.is_null()) return {};
  if (!j.is_array()) return format_error(std::string(src) + ": added_tokens: expected an array");
  std::vector<AddedToken> beyond;  // ids after the model's vocabulary extend it
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = std::string(src) + ": added_tokens[" + std::to_string(i) + "]";
    AddedToken a;
    bool normalized = false, single_word = false;
    int64_t id = -1;
    LR_RETURN_IF_ERROR(read_field(j[i], "content", where, &a.content));
    LR_RETURN_IF_ERROR(read_field(j[i], "id", where, &id));
    LR_RETURN_IF_ERROR(read_field(j[i], "special", where, &a.special));
    LR_RETURN_IF_ERROR(read_field(j[i], "lstrip", where, &a.lstrip));
    LR_RETURN_IF_ERROR(read_field(j[i], "rstrip", where, &a.rstrip));
    LR_RETURN_IF_ERROR(read_field(j[i], "normalized", where, &normalized));
    LR_RETURN_IF_ERROR(read_field(j[i], "single_word", where, &single_word));
    if (a.content.empty() || id < 0) return format_error(where + ": needs a content and an id >= 0");
    if (single_word) return refuse(src, "added_tokens[" + std::to_string(i) + "].single_word", "true");
    const bool has_normalizer =
        spec->lowercase || spec->strip_accents || spec->clean_text || spec->handle_chinese_chars;
    if (normalized && has_normalizer)
      return refuse(src, "added_tokens[" + std::to_string(i) + "].normalized", "true (with a normalizer)");
    a.id = id;
    if (uint64_t(id) >= spec->vocab.size())
      beyond.push_back(a);
    else
      spec->added_tokens.push_back(a);
  }
  std::sort(beyond.begin(), beyond.end(),
            [](const AddedToken& x, const AddedToken& y) { return x.id < y.id; });
  for (const AddedToken& a : beyond) {
    if (uint64_t(a.id) != spec->vocab.size())
      return format_error(std::string(src) + ": added token '" + a.content + "' has id " +
                          std::to_string(a.id) + "; ids after the vocabulary must continue it at " +
                          std::to_string(spec->vocab.size()));
    spec->vocab.push_back(a.content);
    spec->added_tokens.push_back(a);
  }
  return {};
}

}  // namespace

Result<TokenizerSpec> parse_tokenizer_json(std::string_view text, std::string_view source) {
  LR_ASSIGN_OR_RETURN(Json j, parse_json(text, source));
  if (!j.is_object()) return format_error(std::string(source) + ": expected a JSON object");
  TokenizerSpec spec;
  LR_RETURN_IF_ERROR(read_model(j.value("model", Json()), source, &spec));
  LR_RETURN_IF_ERROR(read_normalizer(j.value("normalizer", Json()), source, &spec));
  if (spec.model == TokenizerModel::byte_level_bpe && !j.value("normalizer", Json()).is_null())
    return refuse(source, "normalizer", "a normalizer with a byte-level BPE model");
  LR_RETURN_IF_ERROR(read_pre_tokenizer(j.value("pre_tokenizer", Json()), source, &spec));
  LR_RETURN_IF_ERROR(read_post_processor(j.value("post_processor", Json()), source, &spec));
  LR_RETURN_IF_ERROR(read_added_tokens(j.value("added_tokens", Json()), source, &spec));
  const Json decoder = j.value("decoder", Json());
  const std::string expected_decoder = spec.model == TokenizerModel::wordpiece ? "WordPiece" : "ByteLevel";
  if (!decoder.is_null() && type_of(decoder) != expected_decoder)
    return refuse(source, "decoder.type", "'" + type_of(decoder) + "'");
  return spec;
}

}  // namespace longrun::text
