// create_backend(): the one place that knows every backend. A static table, no
// self-registering initialisers (they get dropped from static links).
#include <array>
#include <string>

#include "backend_factories.h"

namespace longrun {
namespace {

struct BackendEntry {
  std::string_view name;
  Result<std::unique_ptr<Backend>> (*create)(const BackendOptions&);
};

constexpr std::array<BackendEntry, 3> kBackends = {{
    {"reference", &create_reference_backend},
    {"cpu", &create_cpu_backend},
    {"cuda", &create_cuda_backend},
}};

}  // namespace

Result<std::unique_ptr<Backend>> create_backend(std::string_view name, const BackendOptions& options) {
  for (const BackendEntry& e : kBackends) {
    if (e.name != name) continue;
    if (!options.affinity.empty() && name != "cpu")
      return unsupported("backend '" + std::string(name) +
                         "' has no thread pool to pin: thread affinity applies to the cpu backend only");
    if (options.spin_us != 0 && name != "cpu")
      return unsupported("backend '" + std::string(name) +
                         "' has no thread pool to keep spinning: spin_us applies to the cpu backend only");
    return e.create(options);
  }
  std::string known;
  for (const BackendEntry& e : kBackends) known += (known.empty() ? "" : ", ") + std::string(e.name);
  return not_found("unknown backend '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const BackendEntry& e : kBackends) names.emplace_back(e.name);
  return names;
}

}  // namespace longrun
