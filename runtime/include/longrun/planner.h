// The memory planner: liveness over the node order, in-place reuse where the op allows it
// and the input dies at that node, views (reshape) sharing their input's bytes, and
// greedy interval packing of the intermediates into one arena (three orders, the smallest
// arena kept: by size, by lifetime, by size x lifetime).
//
// Graph inputs, graph outputs and weights are external: they live in caller memory (or the
// mapped weight file) bound at run time, so kernels write outputs straight into the
// caller's buffers and inputs/outputs never share memory with anything else.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "longrun/graph.h"
#include "longrun/status.h"

namespace longrun {

struct MemoryReport {
  int64_t arena_bytes = 0;          // the planned arena (intermediates)
  int64_t peak_live_bytes = 0;      // lower bound: max over nodes of bytes live at once
  int64_t weight_bytes_mapped = 0;  // weights used in place (mmap / caller memory)
  // Weight copies the backend made preparing this plan (the cpu backend's prepacked GEMM
  // weights; plans sharing an earlier plan's copy count 0 for it).
  int64_t weight_bytes_copied = 0;
  int64_t workspace_bytes = 0;  // kernel scratch reserved by the backend
  int64_t input_bytes = 0;      // graph inputs (caller memory)
  int64_t output_bytes = 0;     // graph outputs (caller memory)
  int num_values = 0;           // values placed in the arena
  int num_inplace = 0;          // outputs that reuse their input's buffer
  int num_views = 0;            // outputs that are views of their input (no kernel)
  // Multi-line human-readable report (what `longrun-run --memory` prints).
  std::string to_string() const;
};

struct PlannerOptions {
  int64_t alignment = 64;  // every buffer offset is a multiple of this; a power of two <= 64
                           // (host arenas are 64-byte aligned)
  bool allow_inplace = true;
  bool allow_views = true;
};

struct Plan {
  // Per value (indexed by ValueId):
  std::vector<ValueId> storage;  // the value whose bytes this value uses (itself when it
                                 // owns its buffer; the input for in-place/views)
  std::vector<int64_t> offset;   // byte offset in the arena of the value's storage root;
                                 // -1 for external values (inputs, outputs, weights) and
                                 // views of them
  std::vector<int64_t> bytes;    // bytes the value occupies (numel * dtype size)
  std::vector<int> first_def;    // node index defining the value (-1: before the first node)
  std::vector<int> last_use;     // last node index reading it (nodes().size() for outputs;
                                 // first_def for a value nobody reads)
  // Per node: true when the node's output is a view and no kernel needs to run. A view is
  // never planned for a graph output (the kernel copies instead).
  std::vector<bool> skip_node;
  MemoryReport report;
};

// Plans the graph. The graph must have passed verify().
Result<Plan> plan_memory(const Graph& graph, const PlannerOptions& options = {});

}  // namespace longrun
