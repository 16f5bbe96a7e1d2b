#include "cuda/cuda_check.h"

namespace longrun::cuda {
namespace {

const char* cublas_name(cublasStatus_t e) {
  switch (e) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_(unknown)";
}

const char* cufft_name(cufftResult e) {
  switch (e) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "CUFFT_(unknown)";
  }
}

StatusCode code_for(cudaError_t e) {
  return e == cudaErrorMemoryAllocation ? StatusCode::out_of_memory : StatusCode::internal;
}

}  // namespace

Status cuda_status(cudaError_t e, const std::string& call) {
  if (e == cudaSuccess) return {};
  (void)cudaGetLastError();
  return {code_for(e), call + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")"};
}

Status cublas_status(cublasStatus_t e, const std::string& call) {
  if (e == CUBLAS_STATUS_SUCCESS) return {};
  return {e == CUBLAS_STATUS_ALLOC_FAILED ? StatusCode::out_of_memory : StatusCode::internal,
          call + ": " + cublas_name(e)};
}

Status cufft_status(cufftResult e, const std::string& call) {
  if (e == CUFFT_SUCCESS) return {};
  return {e == CUFFT_ALLOC_FAILED ? StatusCode::out_of_memory : StatusCode::internal,
          call + ": " + cufft_name(e)};
}

Status launch_status(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return {};
  return {code_for(e), std::string("launching ") + kernel + ": " + cudaGetErrorName(e) + " (" +
                           cudaGetErrorString(e) + ")"};
}

}  // namespace longrun::cuda
