// The conformance tests' own doctest main. Selects the backend under test from the
// environment: LONGRUN_TEST_BACKEND (default "reference") and LONGRUN_CPU_ISA (cpu only).
// A backend that is not built or has no device here prints one "SKIP conformance.<name>:
// <reason>" line and exits 77, which CTest reports as skipped (SKIP_RETURN_CODE).
// The backend under test runs with 1 thread; the differential tests also create 2-thread
// instances of it (README.md).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "conformance/run_case.h"
#include "longrun/backend.h"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace longrun;
  std::string name = env("LONGRUN_TEST_BACKEND");
  if (name.empty()) name = "reference";
  BackendOptions options;
  options.threads = 1;
  options.isa = env("LONGRUN_CPU_ISA");
  const std::string label = name + (options.isa.empty() ? "" : "." + options.isa);

  Result<std::unique_ptr<Backend>> backend = create_backend(name, options);
  if (!backend.ok()) {
    const StatusCode code = backend.status().code();
    if (code == StatusCode::unsupported || code == StatusCode::not_found) {
      std::printf("SKIP conformance.%s: %s\n", label.c_str(), backend.status().message().c_str());
      return 77;
    }
    std::fprintf(stderr, "conformance.%s: cannot create the backend: %s\n", label.c_str(),
                 backend.status().to_string().c_str());
    return 1;
  }
  std::printf("conformance.%s: %s\n", label.c_str(), backend.value()->description().c_str());
  conformance::set_conformance_backend(std::move(backend).value(), name, options);

  doctest::Context context(argc, argv);
  const int result = context.run();
  conformance::set_conformance_backend(nullptr);
  return result;
}
