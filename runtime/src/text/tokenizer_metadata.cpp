// The compact serialisation of a tokenizer embedded in a native model file (metadata key
// "longrun.tokenizer"): one JSON object, vocabulary as an array indexed by id, merges as
// [a, b] pairs by rank. Read strictly: unknown or missing fields are errors.
#include <set>

#include "text/json_fields.h"
#include "text/tokenizer_impl.h"

namespace longrun::text {
namespace {

constexpr std::string_view kFormat = "longrun.tokenizer/1";
constexpr std::string_view kWhere = "metadata 'longrun.tokenizer'";

Status read_ids(const Json& j, std::string_view key, std::vector<int64_t>* out) {
  const Json& a = j.at(std::string(key));
  if (!a.is_array())
    return format_error(std::string(kWhere) + "." + std::string(key) + ": expected an array");
  for (const Json& id : a) {
    if (!id.is_number_integer())
      return format_error(std::string(kWhere) + "." + std::string(key) + ": expected integers, found " +
                          id.dump());
    out->push_back(id.get<int64_t>());
  }
  return {};
}

}  // namespace

std::string write_tokenizer_metadata(const TokenizerSpec& spec) {
  Json j;
  j["format"] = kFormat;
  j["model"] = spec.model == TokenizerModel::wordpiece ? "wordpiece" : "byte_level_bpe";
  j["vocab"] = spec.vocab;
  Json merges = Json::array();
  for (const auto& [a, b] : spec.merges) merges.push_back(Json::array({a, b}));
  j["merges"] = std::move(merges);
  j["unk_token"] = spec.unk_token;
  j["continuing_subword_prefix"] = spec.continuing_subword_prefix;
  j["max_input_chars_per_word"] = spec.max_input_chars_per_word;
  j["clean_text"] = spec.clean_text;
  j["handle_chinese_chars"] = spec.handle_chinese_chars;
  j["strip_accents"] = spec.strip_accents;
  j["lowercase"] = spec.lowercase;
  j["add_prefix_space"] = spec.add_prefix_space;
  j["prefix_ids"] = spec.prefix_ids;
  j["suffix_ids"] = spec.suffix_ids;
  Json added = Json::array();
  for (const AddedToken& a : spec.added_tokens)
    added.push_back({{"content", a.content},
                     {"id", a.id},
                     {"special", a.special},
                     {"lstrip", a.lstrip},
                     {"rstrip", a.rstrip}});
  j["added_tokens"] = std::move(added);
  return j.dump();
}

Result<TokenizerSpec> parse_tokenizer_metadata(std::string_view text) {
  LR_ASSIGN_OR_RETURN(Json j, parse_json(text, kWhere));
  static const std::set<std::string> kKeys = {"format",
                                              "model",
                                              "vocab",
                                              "merges",
                                              "unk_token",
                                              "continuing_subword_prefix",
                                              "max_input_chars_per_word",
                                              "clean_text",
                                              "handle_chinese_chars",
                                              "strip_accents",
                                              "lowercase",
                                              "add_prefix_space",
                                              "prefix_ids",
                                              "suffix_ids",
                                              "added_tokens"};
  if (!j.is_object()) return format_error(std::string(kWhere) + ": expected a JSON object");
  for (const auto& [key, value] : j.items())
    if (!kKeys.contains(key)) return format_error(std::string(kWhere) + ": unknown field '" + key + "'");
  for (const std::string& key : kKeys)
    if (!j.contains(key)) return format_error(std::string(kWhere) + ": missing field '" + key + "'");
  try {
    if (j["format"] != kFormat)
      return unsupported(std::string(kWhere) + ": format " + j["format"].dump() + " (this build reads " +
                         std::string(kFormat) + ")");
    TokenizerSpec spec;
    const Json& model = j["model"];
    if (model == "wordpiece")
      spec.model = TokenizerModel::wordpiece;
    else if (model == "byte_level_bpe")
      spec.model = TokenizerModel::byte_level_bpe;
    else
      return format_error(std::string(kWhere) + ".model: expected 'wordpiece' or 'byte_level_bpe', found " +
                          model.dump());
    const Json& vocab = j["vocab"];
    if (!vocab.is_array()) return format_error(std::string(kWhere) + ".vocab: expected an array");
    if (vocab.size() > kMaxVocabSize) return format_error(std::string(kWhere) + ".vocab: too many tokens");
    for (const Json& t : vocab) {
      if (!t.is_string())
        return format_error(std::string(kWhere) + ".vocab: expected strings, found " + t.dump());
      spec.vocab.push_back(t.get<std::string>());
    }
    const Json& merges = j["merges"];
    if (!merges.is_array() || merges.size() > kMaxMerges)
      return format_error(std::string(kWhere) + ".merges: expected an array of at most " +
                          std::to_string(kMaxMerges) + " pairs");
    for (const Json& m : merges) {
      if (!m.is_array() || m.size() != 2 || !m[0].is_string() || !m[1].is_string())
        return format_error(std::string(kWhere) + ".merges: expected [a, b], found " + m.dump());
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
    for (auto [key, out] : {std::pair{"unk_token", &spec.unk_token},
                            {"continuing_subword_prefix", &spec.continuing_subword_prefix}}) {
      if (!j[key].is_string()) return format_error(std::string(kWhere) + "." + key + ": expected a string");
      LR_RETURN_IF_ERROR(read_field(j, key, kWhere, out));
    }
    LR_RETURN_IF_ERROR(read_field(j, "max_input_chars_per_word", kWhere, &spec.max_input_chars_per_word));
    for (auto [key, out] : {std::pair{"clean_text", &spec.clean_text},
                            {"handle_chinese_chars", &spec.handle_chinese_chars},
                            {"strip_accents", &spec.strip_accents},
                            {"lowercase", &spec.lowercase},
                            {"add_prefix_space", &spec.add_prefix_space}}) {
      if (!j[key].is_boolean())
        return format_error(std::string(kWhere) + "." + key + ": expected true or false");
      LR_RETURN_IF_ERROR(read_field(j, key, kWhere, out));
    }
    LR_RETURN_IF_ERROR(read_ids(j, "prefix_ids", &spec.prefix_ids));
    LR_RETURN_IF_ERROR(read_ids(j, "suffix_ids", &spec.suffix_ids));
    const Json& added = j["added_tokens"];
    if (!added.is_array()) return format_error(std::string(kWhere) + ".added_tokens: expected an array");
    for (const Json& a : added) {
      AddedToken t;
      t.id = -1;
      if (!a.is_object() || a.size() != 5)
        return format_error(std::string(kWhere) +
                            ".added_tokens: expected {content, id, special, lstrip, rstrip}");
      const std::string where = std::string(kWhere) + ".added_tokens";
      LR_RETURN_IF_ERROR(read_field(a, "content", where, &t.content));
      LR_RETURN_IF_ERROR(read_field(a, "id", where, &t.id));
      LR_RETURN_IF_ERROR(read_field(a, "special", where, &t.special));
      LR_RETURN_IF_ERROR(read_field(a, "lstrip", where, &t.lstrip));
      LR_RETURN_IF_ERROR(read_field(a, "rstrip", where, &t.rstrip));
      spec.added_tokens.push_back(std::move(t));
    }
    return spec;
  } catch (const nlohmann::json::exception& e) {  // a type we did not check: still a clean error
    return format_error(std::string(kWhere) + ": " + e.what());
  }
}

}  // namespace longrun::text
