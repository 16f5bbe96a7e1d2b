// The cuda backend entry point: reports cleanly why it cannot run (not built: no nvcc at
// configure time; no device; a device older than every architecture the kernels were built
// for) or creates the backend (cuda_executor.cu).
#include <string>

#include "backend_factories.h"
#if LONGRUN_HAVE_CUDA
#include "cuda/cuda_executor.h"
#include "cuda/cuda_probe.h"
#endif

namespace longrun {

Result<std::unique_ptr<Backend>> create_cuda_backend(const BackendOptions& options) {
  if (options.external_arena)
    return unsupported("cuda backend: a caller-provided (host) arena is for the host backends only");
  if (options.precision != Precision::f32)
    return unsupported("cuda backend: precision " + std::string(precision_name(options.precision)) +
                       " is not implemented (f32 only)");
#if LONGRUN_HAVE_CUDA
  const cuda::DeviceProbe p = cuda::probe_devices();
  if (p.device_count == 0)
    return unsupported("cuda backend: no CUDA device" + (p.error.empty() ? std::string() : ": " + p.error));
  if (options.device < 0 || options.device >= p.device_count)
    return invalid_argument("cuda backend: device " + std::to_string(options.device) + " does not exist (" +
                            std::to_string(p.device_count) + " present)");
  // Before any context exists on the device: without kernels for it, the first launch would fail.
  const std::string mismatch = cuda::architecture_mismatch(p.devices[size_t(options.device)], options.device,
                                                           cuda::built_architectures());
  if (!mismatch.empty()) return unsupported(mismatch);
  return cuda::make_cuda_backend(options);
#else
  (void)options;
  return unsupported("cuda backend: not built (no CUDA compiler was found when longrun was configured)");
#endif
}

}  // namespace longrun
