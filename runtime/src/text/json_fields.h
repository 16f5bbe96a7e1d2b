// Typed, non-throwing access to fields of untrusted JSON documents (nlohmann::json), with
// errors that name the document and the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "longrun/status.h"

namespace longrun::text {

using Json = nlohmann::json;

// Parses `text` (no exceptions); `source` names it in errors.
Result<Json> parse_json(std::string_view text, std::string_view source);

// Reads object[key] into *out when present and not null; a wrong type is an error naming
// `where`.`key`. Absent or null leaves *out unchanged.
Status read_field(const Json& object, std::string_view key, std::string_view where, bool* out);
Status read_field(const Json& object, std::string_view key, std::string_view where, std::string* out);
Status read_field(const Json& object, std::string_view key, std::string_view where, int64_t* out);

// A token dictionary {"token": id, ...} as a vector indexed by id; the ids must be exactly
// 0..n-1, each once.
Result<std::vector<std::string>> read_vocab_object(const Json& vocab, std::string_view where);

}  // namespace longrun::text
