// The backend's device state (stream, cuBLAS handle, error record, scratch) and device
// allocations owned by shared_ptrs.
#include <string>
#include <vector>

#include "cuda/cuda_kernel.h"

namespace longrun::cuda {

Result<std::shared_ptr<void>> device_alloc(int64_t bytes, const std::string& what) {
  if (bytes <= 0) return std::shared_ptr<void>();
  void* p = nullptr;
  LR_RETURN_IF_ERROR(cuda_status(cudaMalloc(&p, size_t(bytes)),
                                 "cudaMalloc(" + what + ", " + std::to_string(bytes) + " bytes)"));
  return std::shared_ptr<void>(p, [](void* q) { (void)cudaFree(q); });
}

Status check_contiguous(const KernelArgs& args, const char* op) {
  for (const TensorView& v : args.inputs)
    if (!v.desc.is_contiguous())
      return unsupported(std::string(op) + ": non-contiguous input " + v.desc.to_string());
  for (const TensorView& v : args.outputs)
    if (!v.desc.is_contiguous())
      return unsupported(std::string(op) + ": non-contiguous output " + v.desc.to_string());
  return {};
}

std::string flat_index_string(const TensorDesc& d, int64_t flat) {
  std::vector<int64_t> idx(size_t(d.rank()));
  for (int k = d.rank() - 1; k >= 0; --k) {
    idx[size_t(k)] = flat % d.dim(k);
    flat /= d.dim(k);
  }
  std::string s = "[";
  for (size_t k = 0; k < idx.size(); ++k) s += (k ? "," : "") + std::to_string(idx[k]);
  return s + "]";
}

Status Context::init(int device_index) {
  device = device_index;
  LR_CUDA(cudaSetDevice(device));
  LR_CUDA(cudaGetDeviceProperties(&props, device));
  LR_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  LR_ASSIGN_OR_RETURN(blas, cublas_library());
  LR_CUBLAS(blas->create(&cublas));
  LR_CUBLAS(blas->set_stream(cublas, stream));
  // Plain FP32 GEMMs: pedantic math keeps cuBLAS off TF32 and every other reduced-precision path.
  LR_CUBLAS(blas->set_math_mode(cublas, CUBLAS_PEDANTIC_MATH));
  LR_CUDA(cudaEventCreate(&nodes_start));
  LR_CUDA(cudaEventCreate(&nodes_end));
  LR_CUDA(cudaMalloc(reinterpret_cast<void**>(&error_), sizeof(DeviceError)));
  LR_CUDA(cudaMallocHost(reinterpret_cast<void**>(&host_error_), sizeof(DeviceError)));
  LR_CUDA(cudaMemsetAsync(error_, 0, sizeof(DeviceError), stream));
  LR_CUDA(cudaStreamSynchronize(stream));
  return {};
}

Context::~Context() {
  if (stream) (void)cudaStreamSynchronize(stream);
  if (scratch_) (void)cudaFree(scratch_);
  if (error_) (void)cudaFree(error_);
  if (host_error_) (void)cudaFreeHost(host_error_);
  if (nodes_start) (void)cudaEventDestroy(nodes_start);
  if (nodes_end) (void)cudaEventDestroy(nodes_end);
  if (cublas) (void)blas->destroy(cublas);
  if (stream) (void)cudaStreamDestroy(stream);
}

Result<void*> Context::scratch(int64_t bytes) {
  if (bytes <= scratch_bytes_) return scratch_;
  // Kernels already enqueued may still read the old buffer.
  LR_CUDA(cudaStreamSynchronize(stream));
  if (scratch_) LR_CUDA(cudaFree(scratch_));
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  const int64_t grown = bytes + bytes / 4;  // room for the next, slightly larger request
  LR_RETURN_IF_ERROR(cuda_status(cudaMalloc(&scratch_, size_t(grown)),
                                 "cudaMalloc(kernel scratch, " + std::to_string(grown) + " bytes)"));
  scratch_bytes_ = grown;
  return scratch_;
}

Status Context::reset_error() {
  LR_CUDA(cudaMemsetAsync(error_, 0, sizeof(DeviceError), stream));
  return {};
}

Result<DeviceError> Context::take_error() {
  LR_CUDA(cudaMemcpyAsync(host_error_, error_, sizeof(DeviceError), cudaMemcpyDeviceToHost, stream));
  LR_CUDA(cudaStreamSynchronize(stream));
  DeviceError e = *host_error_;
  if (e.code != kNoError) LR_RETURN_IF_ERROR(reset_error());
  return e;
}

}  // namespace longrun::cuda
