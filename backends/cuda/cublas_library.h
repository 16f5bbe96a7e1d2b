// cuBLAS, loaded when the first CUDA backend is made (dlopen), not at program start: linking
// libcublas would make every process about 154 MB larger (its load-time initialisers touch
// that much of libcublasLt), CPU-only users of a CUDA-enabled build included.
#pragma once

#include <cublas_v2.h>

#include <string>

#include "longrun/status.h"

namespace longrun::cuda {

// The cuBLAS entry points the backend calls (the v2 API; cublas_v2.h maps the plain names).
struct CublasLibrary {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasDestroy) destroy = nullptr;
  decltype(&cublasSetStream) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&cublasDgemm) dgemm = nullptr;
};

// The process-wide table, loaded once on the first call (thread-safe; a failure is kept and
// returned to every later call): libcublas.so.<major version of these headers> from the
// dynamic loader's search path, else from the CUDA toolkit library folder this build was
// configured with. unsupported naming the library and what dlopen / dlsym said when it is
// missing or lacks a symbol.
Result<const CublasLibrary*> cublas_library();
// The file name it loads: libcublas.so.<CUBLAS_VER_MAJOR>.
std::string cublas_soname();

}  // namespace longrun::cuda
