// Device discovery for the cuda backend, compiled by nvcc when the toolkit exists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace longrun::cuda {

struct DeviceInfo {
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int64_t memory_bytes = 0;
};

struct DeviceProbe {
  int device_count = 0;
  std::string error;                // the CUDA runtime's message when the query itself failed
  std::vector<DeviceInfo> devices;  // every device the runtime lists, in its order
};

DeviceProbe probe_devices();

// Every device the probe found, in one line: "2 devices: 0 NVIDIA H100 (sm_90, 79.1 GiB), 1 ...".
std::string describe(const DeviceProbe& p);

// The virtual architectures this build has device code for, as nvcc's __CUDA_ARCH_LIST__
// gives them (major * 100 + minor * 10: 900 for compute_90), from CMAKE_CUDA_ARCHITECTURES.
// Empty when the compiler does not say (nvcc before 11.5); then nothing is checked.
std::vector<int> built_architectures();

// Empty when device `index` can run this build's kernels; otherwise why not, naming the
// device, its compute capability and `built`: a device below the lowest built architecture
// has no machine code and no PTX the driver could compile for it, so every kernel launch
// would fail. A device whose properties could not be read (sm 0.0) is not judged here.
std::string architecture_mismatch(const DeviceInfo& device, int index, const std::vector<int>& built);

}  // namespace longrun::cuda
