// The matmul kernel of the cpu backend at int8 precision (matmul_s8.cpp): linear layers with a
// constant weight on the int8 GEMM (gemm_s8.h), every other matmul on the f32 kernel.
#pragma once

#include <memory>

#include "backends/host/host_executor.h"
#include "longrun/graph.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu {

Status cpu_matmul_s8_avx2(const KernelArgs& args);
Result<std::shared_ptr<void>> cpu_matmul_s8_prepare_avx2(const Graph& graph, const Node& node,
                                                         ThreadPool* pool);
inline constexpr host::HostKernel cpu_matmul_s8_avx2_with_prepare{cpu_matmul_s8_avx2,
                                                                  cpu_matmul_s8_prepare_avx2};

}  // namespace longrun::cpu
