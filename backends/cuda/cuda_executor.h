// The cuda backend proper: created by create_cuda_backend() (cuda_backend.cpp) once a
// device has been found.
#pragma once

#include <memory>

#include "longrun/backend.h"

namespace longrun::cuda {

Result<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions& options);

}  // namespace longrun::cuda
