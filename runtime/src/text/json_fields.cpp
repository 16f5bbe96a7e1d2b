#include "text/json_fields.h"

#include <vector>

#include "text/tokenizer_impl.h"

namespace longrun::text {
namespace {

std::string field_name(std::string_view where, std::string_view key) {
  return std::string(where) + "." + std::string(key);
}

const Json* present(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

Result<Json> parse_json(std::string_view text, std::string_view source) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return format_error(std::string(source) + ": not valid JSON (or not UTF-8)");
  return j;
}

Status read_field(const Json& object, std::string_view key, std::string_view where, bool* out) {
  const Json* v = present(object, key);
  if (!v) return {};
  if (!v->is_boolean())
    return format_error(field_name(where, key) + ": expected true or false, found " + v->dump());
  *out = v->get<bool>();
  return {};
}

Status read_field(const Json& object, std::string_view key, std::string_view where, std::string* out) {
  const Json* v = present(object, key);
  if (!v) return {};
  // special_tokens_map.json may write a token as {"content": "[CLS]", ...}.
  if (v->is_object()) return read_field(*v, "content", field_name(where, key), out);
  if (!v->is_string())
    return format_error(field_name(where, key) + ": expected a string, found " + v->dump());
  *out = v->get<std::string>();
  return {};
}

Status read_field(const Json& object, std::string_view key, std::string_view where, int64_t* out) {
  const Json* v = present(object, key);
  if (!v) return {};
  if (!v->is_number_integer())
    return format_error(field_name(where, key) + ": expected an integer, found " + v->dump());
  *out = v->get<int64_t>();
  return {};
}

Result<std::vector<std::string>> read_vocab_object(const Json& vocab, std::string_view where) {
  if (!vocab.is_object()) return format_error(std::string(where) + ": expected an object {token: id}");
  const size_t n = vocab.size();
  if (n == 0) return format_error(std::string(where) + ": empty vocabulary");
  if (n > kMaxVocabSize)
    return format_error(std::string(where) + ": " + std::to_string(n) + " tokens (at most " +
                        std::to_string(kMaxVocabSize) + ")");
  std::vector<std::string> tokens(n);
  std::vector<bool> seen(n, false);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it->is_number_integer())
      return format_error(std::string(where) + ": token '" + it.key() + "': id must be an integer, found " +
                          it->dump());
    const int64_t id = it->get<int64_t>();
    if (id < 0 || uint64_t(id) >= n)
      return format_error(std::string(where) + ": token '" + it.key() + "' has id " + std::to_string(id) +
                          "; ids must be 0.." + std::to_string(n - 1) + " (one per token)");
    if (seen[size_t(id)])
      return format_error(std::string(where) + ": id " + std::to_string(id) + " is given to both '" +
                          tokens[size_t(id)] + "' and '" + it.key() + "'");
    seen[size_t(id)] = true;
    tokens[size_t(id)] = it.key();
  }
  return tokens;
}

}  // namespace longrun::text
