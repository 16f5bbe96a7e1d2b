#include <dlfcn.h>

#include <string>

#include "cuda/cublas_library.h"

// The exported name of a cuBLAS function after cublas_v2.h's macros (cublasCreate is
// cublasCreate_v2).
#define LR_CUBLAS_EXPORTED_NAME_(name) #name
#define LR_CUBLAS_EXPORTED_NAME(name) LR_CUBLAS_EXPORTED_NAME_(name)

namespace longrun::cuda {
namespace {

std::string dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown error";
}

Result<CublasLibrary> load() {
  const std::string soname = cublas_soname();
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = lib != nullptr ? "" : dl_error();
#ifdef LONGRUN_CUDA_LIBRARY_DIR
  if (lib == nullptr) {
    const std::string path = std::string(LONGRUN_CUDA_LIBRARY_DIR) + "/" + soname;
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) why += "; " + dl_error();
  }
#endif
  if (lib == nullptr) return unsupported("cuda: cannot load cuBLAS (" + soname + "): " + why);
  // The library stays loaded for the life of the process (handles may outlive any one user).
  CublasLibrary t;
  std::string missing;
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  bind(t.create, LR_CUBLAS_EXPORTED_NAME(cublasCreate));
  bind(t.destroy, LR_CUBLAS_EXPORTED_NAME(cublasDestroy));
  bind(t.set_stream, LR_CUBLAS_EXPORTED_NAME(cublasSetStream));
  bind(t.set_math_mode, LR_CUBLAS_EXPORTED_NAME(cublasSetMathMode));
  bind(t.sgemm_strided_batched, LR_CUBLAS_EXPORTED_NAME(cublasSgemmStridedBatched));
  bind(t.dgemm, LR_CUBLAS_EXPORTED_NAME(cublasDgemm));
  if (!missing.empty()) return unsupported("cuda: " + soname + " lacks " + missing);
  return t;
}

}  // namespace

std::string cublas_soname() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }

Result<const CublasLibrary*> cublas_library() {
  static const Result<CublasLibrary> loaded = load();  // C++ guarantees one thread runs load()
  if (!loaded.ok()) return loaded.status();
  return &loaded.value();
}

}  // namespace longrun::cuda
