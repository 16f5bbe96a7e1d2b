// Asks the CUDA runtime which devices exist. A machine without a driver or GPU answers with
// an error code that becomes a one-line reason, never a crash.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>

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
  for (int d = 0; d < n; ++d) {
    DeviceInfo info;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
      info.name = prop.name;
      info.sm_major = prop.major;
      info.sm_minor = prop.minor;
      info.memory_bytes = int64_t(prop.totalGlobalMem);
    } else {
      info.name = "(properties unavailable)";
      (void)cudaGetLastError();
    }
    p.devices.push_back(info);
  }
  return p;
}

std::string describe(const DeviceProbe& p) {
  std::string s = std::to_string(p.device_count) + (p.device_count == 1 ? " device:" : " devices:");
  for (size_t d = 0; d < p.devices.size(); ++d) {
    const DeviceInfo& i = p.devices[d];
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB", double(i.memory_bytes) / double(int64_t(1) << 30));
    s += (d == 0 ? " " : ", ") + std::to_string(d) + " " + i.name + " (sm_" + std::to_string(i.sm_major) +
         std::to_string(i.sm_minor) + ", " + mem + ")";
  }
  return s;
}

std::vector<int> built_architectures() {
#ifdef __CUDA_ARCH_LIST__
  return std::vector<int>{__CUDA_ARCH_LIST__};
#else
  return {};
#endif
}

std::string architecture_mismatch(const DeviceInfo& device, int index, const std::vector<int>& built) {
  if (built.empty() || device.sm_major <= 0) return {};
  const int capability = device.sm_major * 100 + device.sm_minor * 10;
  const int lowest = *std::min_element(built.begin(), built.end());
  if (capability >= lowest) return {};
  std::string list;
  for (int a : built) list += (list.empty() ? "compute_" : ", compute_") + std::to_string(a / 10);
  const std::string cc = std::to_string(device.sm_major) + "." + std::to_string(device.sm_minor);
  return "cuda backend: device " + std::to_string(index) + " (" + device.name + ") has compute capability " +
         cc + ", below every architecture this build has kernels for (" + list +
         "); reconfigure with CMAKE_CUDA_ARCHITECTURES including " + std::to_string(device.sm_major) +
         std::to_string(device.sm_minor) + " and rebuild";
}

}  // namespace longrun::cuda
