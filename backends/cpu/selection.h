// The cpu backend's top-k kernels: topk_mask and topk_indices by per-row radix selection
// (no full sort). Plain C++ (the work is histogramming and compaction, not arithmetic), used
// for both the avx2 and the avx512 rows of kernels.inc.
//
// Each row's values become 32-bit keys whose unsigned order is the op's order (NaN above
// +inf, -0 equal to +0); a three-pass radix select (11 + 11 + 10 bits) finds the k-th largest
// key T and how many keys equal to T are taken; "ties: lower index wins" then means: every
// key > T, plus the first `need` keys == T in index order. topk_indices sorts only the k
// selected (key, index) pairs. Rows of 512 or more take a sampled route first for
// topk_indices: a threshold from 256 evenly spaced keys, one branch-free pass keeping the
// (key, index) pairs at or above it (about 1.25 k + a few) and an LSD radix sort of those
// (8-bit digits, bytes that all candidates share skipped); when the sample's threshold lets
// fewer than k through, the radix-select route runs.
// The result is deterministic and equal to the reference's either way.
//
// Scratch (keys, candidates, histogram, selected pairs) is allocated per parallel chunk by
// the prepare step; a direct call without prepared state allocates it per call.
#pragma once

#include <memory>

#include "backends/host/host_executor.h"
#include "longrun/graph.h"
#include "longrun/ops/schema.h"

namespace longrun::cpu {

Status cpu_topk_mask_f32(const KernelArgs& args);
Status cpu_topk_indices_f32(const KernelArgs& args);
Result<std::shared_ptr<void>> cpu_topk_prepare(const Graph& graph, const Node& node, ThreadPool* pool);

inline constexpr host::HostKernel cpu_topk_mask_f32_with_prepare{cpu_topk_mask_f32, cpu_topk_prepare};
inline constexpr host::HostKernel cpu_topk_indices_f32_with_prepare{cpu_topk_indices_f32, cpu_topk_prepare};

}  // namespace longrun::cpu
