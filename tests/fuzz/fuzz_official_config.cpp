// libFuzzer target for the official-config translation of tools/convert/official_config.cpp
// (docs/checkpoints.md#official-configs): the first byte picks the architecture (fourier-lra,
// fastformer, combiner, or bert, which passes through), the rest is the config text as a
// user's --config file would give it.
//
// Built and run by tools/dev/fuzz.sh (seeds: the official config fixtures of
// tests/golden/checkpoints, each with every architecture byte). Properties: no crash, no
// sanitizer report, every error carries a message, every dropped key has a note; a config
// that is a JSON object comes back as a JSON object, anything else unchanged (the family's
// strict parser reports it).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "official_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr std::string_view kArch[] = {"fourier-lra", "fastformer", "combiner", "bert"};
  const std::string_view arch = kArch[data[0] % 4];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto r = longrun::convert::translate_official_config(arch, text);
  if (!r.ok()) {
    if (r.status().message().empty()) fuzz_input::fail();
    return 0;
  }
  for (const std::string& note : r->notes)
    if (note.empty()) fuzz_input::fail();
  const auto in = nlohmann::json::parse(text, nullptr, false);
  if (in.is_discarded() || !in.is_object()) {
    if (r->config_json != text) fuzz_input::fail();
    return 0;
  }
  const auto out = nlohmann::json::parse(r->config_json, nullptr, false);
  if (out.is_discarded() || !out.is_object()) fuzz_input::fail();
  return 0;
}
