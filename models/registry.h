// The static table of model families: arch name -> config parser. The parsed config is an
// Architecture, which is the family's parameter table and graph builder for that config.
// A plain array (no self-registering statics, which static linking drops).
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "common/architecture.h"
#include "longrun/status.h"

namespace longrun::models {

struct Family {
  std::string_view arch;     // the value of "longrun.arch"
  std::string_view summary;  // one line for --help and error messages
  // Parses the "longrun.config" JSON (strict: unknown fields are errors).
  Result<std::unique_ptr<Architecture>> (*parse_config)(std::string_view config_json);
};

std::span<const Family> families();
const Family* find_family(std::string_view arch);

}  // namespace longrun::models
