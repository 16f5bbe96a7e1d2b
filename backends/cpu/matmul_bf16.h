// The matmul kernel of the cpu backend at bf16 precision (matmul_bf16.cpp): linear layers
// with a constant weight on the bf16 GEMM (gemm_bf16.h), every other matmul on the f32 kernel.
#pragma once

#include <memory>

#include "backends/host/host_executor.h"
#include "longrun/graph.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu {

Status cpu_matmul_bf16_avx2(const KernelArgs& args);
Result<std::shared_ptr<void>> cpu_matmul_bf16_prepare_avx2(const Graph& graph, const Node& node,
                                                           ThreadPool* pool);
inline constexpr host::HostKernel cpu_matmul_bf16_avx2_with_prepare{cpu_matmul_bf16_avx2,
                                                                    cpu_matmul_bf16_prepare_avx2};

}  // namespace longrun::cpu
