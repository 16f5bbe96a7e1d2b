// Factory functions of the built-in backends; registry.cpp lists them in create_backend().
#pragma once

#include <memory>

#include "longrun/backend.h"

namespace longrun {

Result<std::unique_ptr<Backend>> create_reference_backend(const BackendOptions& options);
Result<std::unique_ptr<Backend>> create_cpu_backend(const BackendOptions& options);
Result<std::unique_ptr<Backend>> create_cuda_backend(const BackendOptions& options);

}  // namespace longrun
