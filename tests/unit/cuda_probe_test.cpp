// The CUDA backend refuses a device older than every architecture the build has kernels for
// (backends/cuda/cuda_probe.h). Runs without a GPU: the check is a pure function of the
// device's properties and the build's architecture list.
#ifdef LONGRUN_HAVE_CUDA
#include "backends/cuda/cuda_probe.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using longrun::cuda::architecture_mismatch;
using longrun::cuda::DeviceInfo;

TEST_CASE("cuda: the build names its architectures as nvcc compiled them") {
  const std::vector<int> built = longrun::cuda::built_architectures();
  REQUIRE(!built.empty());
  for (int a : built) {
    CHECK(a >= 300);
    CHECK(a % 10 == 0);
  }
}

TEST_CASE("cuda: a device below the lowest built architecture is refused with its name and capability") {
  const DeviceInfo v100{.name = "Tesla V100-SXM2-16GB", .sm_major = 7, .sm_minor = 0};
  const std::string why = architecture_mismatch(v100, 1, {900});
  CHECK(why ==
        "cuda backend: device 1 (Tesla V100-SXM2-16GB) has compute capability 7.0, below every "
        "architecture this build has kernels for (compute_90); reconfigure with "
        "CMAKE_CUDA_ARCHITECTURES including 70 and rebuild");
  const DeviceInfo a10{.name = "NVIDIA A10", .sm_major = 8, .sm_minor = 6};
  CHECK(architecture_mismatch(a10, 0, {900, 1000}).find("(compute_90, compute_100)") != std::string::npos);
}

TEST_CASE("cuda: a device at or above the lowest built architecture passes") {
  const DeviceInfo h100{.name = "NVIDIA H100", .sm_major = 9, .sm_minor = 0};
  const DeviceInfo a10{.name = "NVIDIA A10", .sm_major = 8, .sm_minor = 6};
  const DeviceInfo b200{.name = "NVIDIA B200", .sm_major = 10, .sm_minor = 0};
  CHECK(architecture_mismatch(h100, 0, {900}).empty());
  CHECK(architecture_mismatch(b200, 0, {900}).empty());  // newer: not judged (compute_90 PTX runs there)
  CHECK(architecture_mismatch(a10, 0, {800, 900}).empty());
  // Nothing to judge: an unknown build list, or properties that could not be read.
  CHECK(architecture_mismatch(a10, 0, {}).empty());
  CHECK(architecture_mismatch(DeviceInfo{.name = "(properties unavailable)"}, 0, {900}).empty());
}
#endif
