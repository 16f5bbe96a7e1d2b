// The model tests' own doctest main. Selects the backend from LONGRUN_TEST_BACKEND (default
// "reference"). A backend that is not built or has no device here prints one
// "SKIP models.<name>: <reason>" line and exits 77, which CTest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "longrun/backend.h"
#include "models/model_test_util.h"

int main(int argc, char** argv) {
  using namespace longrun;
  const char* env = std::getenv("LONGRUN_TEST_BACKEND");
  const std::string name = env && *env ? env : "reference";
  Result<std::unique_ptr<Backend>> backend = create_backend(name, {});
  if (!backend.ok()) {
    const StatusCode code = backend.status().code();
    if (code == StatusCode::unsupported || code == StatusCode::not_found) {
      std::printf("SKIP models.%s: %s\n", name.c_str(), backend.status().message().c_str());
      return 77;
    }
    std::fprintf(stderr, "models.%s: cannot create the backend: %s\n", name.c_str(),
                 backend.status().to_string().c_str());
    return 1;
  }
  std::printf("models.%s: %s\n", name.c_str(), backend.value()->description().c_str());
  model_tests::set_backend_name(name);
  doctest::Context context(argc, argv);
  return context.run();
}
