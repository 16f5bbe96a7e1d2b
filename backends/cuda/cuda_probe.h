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

}  // namespace longrun::cuda
