// Device discovery for the cuda backend, compiled by nvcc when the toolkit exists.
#pragma once

#include <string>

namespace longrun::cuda {

struct DeviceProbe {
  int device_count = 0;
  std::string error;  // the CUDA runtime's message when the query itself failed
  std::string name;   // device 0
  int sm_major = 0, sm_minor = 0;
};

DeviceProbe probe_devices();

}  // namespace longrun::cuda
