// The reference backend's matmul at int8 precision (matmul_int8.cpp): the scalar run of the
// int8 format of longrun/ops/reduced_precision.h, the oracle of the cpu backend's int8 GEMM.
#pragma once

#include <memory>

#include "backends/host/host_executor.h"
#include "longrun/graph.h"
#include "longrun/ops/schema.h"

namespace longrun::reference {

Status matmul_int8(const KernelArgs& args);
Result<std::shared_ptr<void>> matmul_int8_prepare(const Graph& graph, const Node& node, ThreadPool* pool);
inline constexpr host::HostKernel matmul_int8_with_prepare{matmul_int8, matmul_int8_prepare};

}  // namespace longrun::reference
