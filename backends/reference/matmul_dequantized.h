// The reference backend's f32 matmul for a quantized B (dtype i8, graph.h ChannelScales): B's
// f32 values q · scale are made at prepare, one copy per weight shared by every prepared
// matmul that reads it (in any plan or session, while one lives), and the reference matmul
// reads them; a matmul whose B is not quantized runs the reference matmul as it is.
#pragma once

#include <memory>

#include "backends/host/host_executor.h"
#include "longrun/graph.h"
#include "longrun/ops/schema.h"

namespace longrun::reference {

Status matmul_dequantized(const KernelArgs& args);

// The f32 reference matmul on `args` with A read from `a` (contiguous, A's dims) and B from
// the f32 values `b` (contiguous, B's dims); nullptr keeps that input as it is.
Status reference_matmul_reading(const KernelArgs& args, const float* a, const float* b);
Result<std::shared_ptr<void>> matmul_dequantized_prepare(const Graph& graph, const Node& node,
                                                         ThreadPool* pool);
// Live shared f32 copies of quantized weights (tests).
size_t dequantized_weight_entries();
inline constexpr host::HostKernel matmul_dequantized_with_prepare{matmul_dequantized,
                                                                  matmul_dequantized_prepare};

}  // namespace longrun::reference
