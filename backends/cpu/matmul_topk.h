// The cpu backend's matmul_topk (semantics: attrs.h): each row's top k of alpha * A B^T
// without the [M, Nk] product, so Lasformer's key selection costs O(M k) memory at any length.
//
// B is packed once per run into the GEMM's NR-column panels (shared scratch). Query rows go
// in blocks of rows_per_block (a multiple of the microkernel's MR); for each block the
// score tile of kTileColumns keys is computed by the ISA's GEMM macro kernel with A read in
// place (the same FMA chain and alpha epilogue as the cpu matmul, so the scores equal that
// product's bit for bit) and reduced at once into each row's running top k:
//   - every row keeps up to 2k + kSlack candidates as (order key, index) composites
//     (topk_order.h) and a threshold composite t, the k-th best of its last compaction;
//   - a tile value enters only when its composite beats t: one vector compare per 4 values
//     against t's float finds the few that reach t's key, and the composite settles ties
//     (a later column never wins a tie, so a value equal to t's is rejected);
//   - when the buffer is full, nth_element keeps the best k and t becomes the k-th.
// At the end each row sorts its best k (descending composite = the op's order) and writes
// min(k, eligible, row_k) indices, then -1. Causal blocks stop at their last reachable key
// tile; masked keys never enter. Rows are independent, so the result does not depend on the
// thread count or the block size.
#pragma once

#include <memory>

#include "backends/host/host_executor.h"
#include "longrun/graph.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu {

Status cpu_matmul_topk_f32_avx2(const KernelArgs& args);
Status cpu_matmul_topk_f32_avx512(const KernelArgs& args);
Result<std::shared_ptr<void>> cpu_matmul_topk_prepare_avx2(const Graph& graph, const Node& node,
                                                           ThreadPool* pool);
Result<std::shared_ptr<void>> cpu_matmul_topk_prepare_avx512(const Graph& graph, const Node& node,
                                                             ThreadPool* pool);

inline constexpr host::HostKernel cpu_matmul_topk_f32_avx2_with_prepare{cpu_matmul_topk_f32_avx2,
                                                                        cpu_matmul_topk_prepare_avx2};
inline constexpr host::HostKernel cpu_matmul_topk_f32_avx512_with_prepare{cpu_matmul_topk_f32_avx512,
                                                                          cpu_matmul_topk_prepare_avx512};

}  // namespace longrun::cpu
