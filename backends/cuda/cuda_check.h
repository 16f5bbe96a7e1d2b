// Every CUDA runtime, cuBLAS and cuFFT return code becomes a Status naming the call and the
// library's own error name, so a failure reads "cudaMalloc(arena, 1048576 bytes):
// cudaErrorMemoryAllocation (out of memory)" instead of a crash or a silent wrong result.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cufft.h>

#include <string>

#include "longrun/status.h"

namespace longrun::cuda {

// The Status for a failed runtime call (ok for cudaSuccess). Clears the runtime's
// last-error slot so the next call starts clean; a sticky error (a kernel that faulted)
// stays visible to every later call, which is what makes the next run fail loudly too.
Status cuda_status(cudaError_t e, const std::string& call);
Status cublas_status(cublasStatus_t e, const std::string& call);
Status cufft_status(cufftResult e, const std::string& call);

// After a kernel launch: the launch's own error (bad configuration, too many resources).
Status launch_status(const char* kernel);

}  // namespace longrun::cuda

// LR_CUDA(cudaMemsetAsync(p, 0, n, s)) returns the Status from the enclosing function on
// failure; the message names the call as written.
#define LR_CUDA(call) LR_RETURN_IF_ERROR(::longrun::cuda::cuda_status((call), #call))
#define LR_CUBLAS(call) LR_RETURN_IF_ERROR(::longrun::cuda::cublas_status((call), #call))
#define LR_CUFFT(call) LR_RETURN_IF_ERROR(::longrun::cuda::cufft_status((call), #call))
// After `kernel<<<...>>>(...)`: LR_CUDA_LAUNCHED("kernel_name");
#define LR_CUDA_LAUNCHED(name) LR_RETURN_IF_ERROR(::longrun::cuda::launch_status(name))
