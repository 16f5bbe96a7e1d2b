// The CUDA backend loads cuBLAS on demand (backends/cuda/cublas_library.h). Runs without a
// GPU: loading and binding the library needs only the toolkit's files.
#ifdef LONGRUN_HAVE_CUDA
#include <dlfcn.h>
#include <doctest/doctest.h>

#include "backends/cuda/cublas_library.h"

TEST_CASE("cuda: cuBLAS is not loaded at start, and loads with every entry point the backend calls") {
  const std::string soname = longrun::cuda::cublas_soname();
  // No test in this executable makes a CUDA backend, so nothing has loaded it yet.
  CHECK(dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD) == nullptr);
  const auto lib = longrun::cuda::cublas_library();
  REQUIRE_MESSAGE(lib.ok(), lib.status().message());
  const longrun::cuda::CublasLibrary& t = *lib.value();
  CHECK(bool(t.create));
  CHECK(bool(t.destroy));
  CHECK(bool(t.set_stream));
  CHECK(bool(t.set_math_mode));
  CHECK(bool(t.sgemm_strided_batched));
  CHECK(bool(t.dgemm));
  CHECK(longrun::cuda::cublas_library().value() == &t);  // loaded once
}
#endif
