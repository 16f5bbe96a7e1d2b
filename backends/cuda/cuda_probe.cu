// Asks the CUDA runtime which devices exist. A machine without a driver or GPU answers with
// an error code that becomes a one-line reason, never a crash.
#include <cuda_runtime_api.h>

#include "cuda/cuda_probe.h"

namespace longrun::cuda {

DeviceProbe probe_devices() {
  DeviceProbe p;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    p.error = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return p;
  }
  p.device_count = n;
  if (n > 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
      p.name = prop.name;
      p.sm_major = prop.major;
      p.sm_minor = prop.minor;
    }
  }
  return p;
}

}  // namespace longrun::cuda
