// Strict reading of a family's `longrun.config` JSON object.
//
// Every getter names the field in its error ("fourier-lra config: field 'num_head': expected
// an integer in [1, 4096], found 0"). finish() rejects any key no getter asked for, so a
// typo ("filter_layer") is an error instead of a silently different model. Keys that the
// official configs carry but inference does not use are accepted with ignore().
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "longrun/status.h"

namespace longrun::models {

class ConfigReader {
 public:
  // Parses `text` (must be a JSON object). `what` prefixes messages ("fourier-lra config").
  static Result<ConfigReader> parse(std::string_view text, std::string what);

  bool has(std::string_view key) const;
  // Required fields.
  Result<int64_t> integer(std::string_view key, int64_t min, int64_t max);
  Result<double> number(std::string_view key, double min, double max);
  // Optional fields (the default when absent; checked like the required form when present).
  Result<int64_t> integer_or(std::string_view key, int64_t fallback, int64_t min, int64_t max);
  Result<double> number_or(std::string_view key, double fallback, double min, double max);
  Result<bool> boolean_or(std::string_view key, bool fallback);
  Result<std::string> string_or(std::string_view key, std::string fallback);
  // A list of integers, each in [min, max].
  Result<std::vector<int64_t>> integer_list(std::string_view key, int64_t min, int64_t max);
  // Spectral-filter placement: `layers_key` lists distinct layer indices in [0, num_layers);
  // `ratio_key` (the kept fraction) is required in (0, 1] when a layer is listed, optional
  // (default 0) otherwise. A ratio above 1 would act as 1 (the kept slice caps) and <= 0 has
  // no meaning, so both are errors.
  Status filter_layers(std::string_view layers_key, std::string_view ratio_key, int64_t num_layers,
                       std::vector<int64_t>* layers, double* ratio);

  // Accepts the key (any value) without using it.
  void ignore(std::string_view key);
  // Fails naming every key that was not read or ignored.
  Status finish() const;

  Status error(std::string_view key, const std::string& message) const;

 private:
  const nlohmann::json* get(std::string_view key);
  nlohmann::json j_;
  std::string what_;
  std::set<std::string, std::less<>> used_;
};

}  // namespace longrun::models
