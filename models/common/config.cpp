#include "common/config.h"

#include <cmath>
#include <limits>

namespace longrun::models {
namespace {

using json = nlohmann::json;

std::string found(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

bool as_integer(const json& v, int64_t* out) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return false;
    *out = v.get<int64_t>();
    return true;
  }
  return false;
}

}  // namespace

Result<ConfigReader> ConfigReader::parse(std::string_view text, std::string what) {
  ConfigReader r;
  r.what_ = std::move(what);
  // No exceptions: a malformed document comes back discarded.
  r.j_ = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (r.j_.is_discarded()) return format_error(r.what_ + ": not valid JSON");
  if (!r.j_.is_object()) return format_error(r.what_ + ": expected a JSON object, found " + found(r.j_));
  return r;
}

Status ConfigReader::error(std::string_view key, const std::string& message) const {
  return format_error(what_ + ": field '" + std::string(key) + "': " + message);
}

bool ConfigReader::has(std::string_view key) const { return j_.contains(key); }

const json* ConfigReader::get(std::string_view key) {
  used_.insert(std::string(key));
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

Result<int64_t> ConfigReader::integer(std::string_view key, int64_t min, int64_t max) {
  const json* v = get(key);
  if (v == nullptr)
    return error(
        key, "missing (expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "])");
  int64_t x = 0;
  if (!as_integer(*v, &x) || x < min || x > max)
    return error(key, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                          "], found " + found(*v));
  return x;
}

Result<double> ConfigReader::number(std::string_view key, double min, double max) {
  const json* v = get(key);
  auto range = [&] { return "a number in [" + json(min).dump() + ", " + json(max).dump() + "]"; };
  if (v == nullptr) return error(key, "missing (expected " + range() + ")");
  if (!v->is_number()) return error(key, "expected " + range() + ", found " + found(*v));
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < min || x > max)
    return error(key, "expected " + range() + ", found " + found(*v));
  return x;
}

Result<int64_t> ConfigReader::integer_or(std::string_view key, int64_t fallback, int64_t min, int64_t max) {
  if (!has(key)) {
    used_.insert(std::string(key));
    return fallback;
  }
  return integer(key, min, max);
}

Result<double> ConfigReader::number_or(std::string_view key, double fallback, double min, double max) {
  if (!has(key)) {
    used_.insert(std::string(key));
    return fallback;
  }
  return number(key, min, max);
}

Result<bool> ConfigReader::boolean_or(std::string_view key, bool fallback) {
  const json* v = get(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return error(key, "expected true or false, found " + found(*v));
  return v->get<bool>();
}

Result<std::string> ConfigReader::string_or(std::string_view key, std::string fallback) {
  const json* v = get(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) return error(key, "expected a string, found " + found(*v));
  return v->get<std::string>();
}

Result<std::vector<int64_t>> ConfigReader::integer_list(std::string_view key, int64_t min, int64_t max) {
  const json* v = get(key);
  const std::string want = "a list of integers in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (v == nullptr) return error(key, "missing (expected " + want + ")");
  if (!v->is_array()) return error(key, "expected " + want + ", found " + found(*v));
  std::vector<int64_t> out;
  for (const json& e : *v) {
    int64_t x = 0;
    if (!as_integer(e, &x) || x < min || x > max)
      return error(key, "expected " + want + ", found " + found(*v));
    out.push_back(x);
  }
  return out;
}

Status ConfigReader::filter_layers(std::string_view layers_key, std::string_view ratio_key,
                                   int64_t num_layers, std::vector<int64_t>* layers, double* ratio) {
  LR_ASSIGN_OR_RETURN(*layers, integer_list(layers_key, 0, num_layers - 1));
  std::set<int64_t> seen;
  for (int64_t i : *layers)
    if (!seen.insert(i).second) return error(layers_key, "layer " + std::to_string(i) + " listed twice");
  if (!layers->empty()) {
    LR_ASSIGN_OR_RETURN(*ratio, number(ratio_key, 0x1p-30, 1.0));
  } else {
    LR_ASSIGN_OR_RETURN(*ratio, number_or(ratio_key, 0.0, 0.0, 1.0));
  }
  return {};
}

void ConfigReader::ignore(std::string_view key) { used_.insert(std::string(key)); }

Status ConfigReader::finish() const {
  std::string unknown;
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (!used_.contains(it.key())) unknown += (unknown.empty() ? "'" : ", '") + it.key() + "'";
  }
  if (!unknown.empty()) return format_error(what_ + ": unknown field " + unknown);
  return {};
}

}  // namespace longrun::models
