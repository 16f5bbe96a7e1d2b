// The memory planner (planner.h): liveness over the topological node order, views and
// in-place aliasing, then greedy interval packing of the remaining buffers into one arena
// (each buffer at the lowest aligned offset that no buffer with an overlapping lifetime
// occupies), in three orders -- by size as XNNPACK / TFLite, by lifetime, by size x
// lifetime -- keeping the smallest arena.
#include "longrun/planner.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "longrun/checked_math.h"
#include "longrun/ops/schema.h"

namespace longrun {
namespace {

// Per storage root: the lifetime interval that every alias of it (views, in-place outputs)
// extends, and its aligned size.
struct Buffer {
  ValueId root = kNoValue;
  int64_t size = 0;  // aligned bytes
  int first = 0;     // first_def of the root
  int last = 0;      // max last_use over the root and its aliases
  int64_t offset = -1;
};

bool lifetimes_overlap(const Buffer& a, const Buffer& b) { return a.first <= b.last && b.first <= a.last; }

std::string value_label(const Graph& g, ValueId v) {
  const std::string& n = g.value(v).name;
  return "value " + std::to_string(v) + (n.empty() ? "" : " '" + n + "'");
}

Result<int64_t> value_bytes(const Graph& g, ValueId v) {
  const TensorDesc& d = g.value(v).desc;
  int64_t numel = 0, bytes = 0;
  if (!checked_product(d.dims(), &numel) || !checked_mul(numel, int64_t(dtype_size(d.dtype())), &bytes))
    return overflow_error("planner: " + value_label(g, v) + " " + d.to_string() +
                          ": byte size overflows int64");
  return bytes;
}

Result<int64_t> aligned(int64_t bytes, int64_t alignment, const std::string& what) {
  uint64_t r = 0;
  if (!checked_align_up(uint64_t(bytes), uint64_t(alignment), &r) ||
      r > uint64_t(std::numeric_limits<int64_t>::max()))
    return overflow_error("planner: " + what + ": " + std::to_string(bytes) + " bytes aligned to " +
                          std::to_string(alignment) + " overflows int64");
  return int64_t(r);
}

Status add_bytes(int64_t* total, int64_t b, const char* what) {
  if (!checked_add(*total, b, total))
    return overflow_error(std::string("planner: total ") + what + " bytes overflow int64");
  return {};
}

// Structural checks the planner relies on (plan_memory expects a verified graph, but a
// bad graph must give a Status, not out-of-bounds reads). Fills first_def from the nodes.
Status check_structure(const Graph& g, std::vector<int>* first_def) {
  const int64_t nv = int64_t(g.values().size());
  auto in_range = [&](ValueId v) { return v >= 0 && int64_t(v) < nv; };
  first_def->assign(size_t(nv), -1);
  std::vector<bool> defined(size_t(nv), false);
  for (ValueId v = 0; v < ValueId(nv); ++v) {
    if (g.value(v).role != ValueRole::intermediate) defined[size_t(v)] = true;
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    const std::string where = "planner: node " + std::to_string(i) + " '" + n.name + "'";
    if (n.outputs.empty()) return invalid_argument(where + ": has no outputs");
    for (ValueId v : n.inputs) {
      if (!in_range(v)) return invalid_argument(where + ": input id " + std::to_string(v) + " out of range");
      if (!defined[size_t(v)])
        return invalid_argument(where + ": reads " + value_label(g, v) + " before it is defined");
    }
    for (ValueId v : n.outputs) {
      if (!in_range(v)) return invalid_argument(where + ": output id " + std::to_string(v) + " out of range");
      if (defined[size_t(v)] || g.value(v).role != ValueRole::intermediate)
        return invalid_argument(where + ": " + value_label(g, v) + " has more than one producer");
      defined[size_t(v)] = true;
      (*first_def)[size_t(v)] = int(i);
    }
  }
  for (ValueId v = 0; v < ValueId(nv); ++v) {
    if (!defined[size_t(v)]) return invalid_argument("planner: " + value_label(g, v) + " has no producer");
  }
  for (ValueId v : g.outputs()) {
    if (!in_range(v))
      return invalid_argument("planner: graph output id " + std::to_string(v) + " out of range");
  }
  for (ValueId v : g.inputs()) {
    if (!in_range(v))
      return invalid_argument("planner: graph input id " + std::to_string(v) + " out of range");
  }
  return {};
}

// Places `b` at the lowest aligned offset that no already-placed buffer with an overlapping
// lifetime occupies. `placed` holds the placed buffers.
Status place(Buffer* b, const std::vector<const Buffer*>& placed, int64_t alignment) {
  std::vector<const Buffer*> conflicts;
  for (const Buffer* p : placed) {
    if (p->size > 0 && lifetimes_overlap(*p, *b)) conflicts.push_back(p);
  }
  std::sort(conflicts.begin(), conflicts.end(),
            [](const Buffer* x, const Buffer* y) { return x->offset < y->offset; });
  int64_t candidate = 0;
  for (const Buffer* c : conflicts) {
    int64_t end = 0;
    if (!checked_add(candidate, b->size, &end))
      return overflow_error("planner: arena offset overflows int64");
    if (end <= c->offset) break;  // fits in the gap before c
    int64_t c_end = 0;
    if (!checked_add(c->offset, c->size, &c_end))
      return overflow_error("planner: arena offset overflows int64");
    LR_ASSIGN_OR_RETURN(int64_t next, aligned(c_end, alignment, "arena offset"));
    candidate = std::max(candidate, next);
  }
  b->offset = candidate;
  return {};
}

}  // namespace

Result<Plan> plan_memory(const Graph& graph, const PlannerOptions& options) {
  if (options.alignment <= 0 || options.alignment > 64 || (options.alignment & (options.alignment - 1)) != 0)
    return invalid_argument("planner: alignment must be a power of two <= 64, got " +
                            std::to_string(options.alignment));
  Plan plan;
  LR_RETURN_IF_ERROR(check_structure(graph, &plan.first_def));

  const size_t nv = graph.values().size();
  const int num_nodes = int(graph.nodes().size());
  MemoryReport& report = plan.report;

  // Bytes, roles and raw liveness of every value.
  plan.bytes.assign(nv, 0);
  std::vector<bool> is_output(nv, false);
  for (ValueId v : graph.outputs()) is_output[size_t(v)] = true;
  for (size_t v = 0; v < nv; ++v) {
    if (graph.values()[v].is_output) is_output[v] = true;
    LR_ASSIGN_OR_RETURN(plan.bytes[v], value_bytes(graph, ValueId(v)));
  }
  auto is_external = [&](ValueId v) {
    return graph.value(v).role != ValueRole::intermediate || is_output[size_t(v)];
  };
  plan.last_use = plan.first_def;
  for (int i = 0; i < num_nodes; ++i) {
    for (ValueId v : graph.nodes()[size_t(i)].inputs)
      plan.last_use[size_t(v)] = std::max(plan.last_use[size_t(v)], i);
  }
  for (size_t v = 0; v < nv; ++v) {
    if (is_output[v]) plan.last_use[v] = num_nodes;
  }

  // Storage roots. root_last[r] is the last use over r and every alias of it seen so far;
  // all aliases of r are defined at or before any node that could alias r again, so it is
  // exact when the in-place test below reads it.
  plan.storage.resize(nv);
  std::iota(plan.storage.begin(), plan.storage.end(), ValueId(0));
  std::vector<int> root_last = plan.last_use;
  plan.skip_node.assign(size_t(num_nodes), false);
  for (int i = 0; i < num_nodes; ++i) {
    const Node& node = graph.nodes()[size_t(i)];
    const OpSchema& schema = op_schema(node.kind);
    const ValueId out = node.outputs[0];
    if (is_output[size_t(out)] || node.inputs.empty()) continue;  // outputs live in caller memory
    if (schema.is_view && options.allow_views) {
      const ValueId root = plan.storage[size_t(node.inputs[0])];
      plan.storage[size_t(out)] = root;
      root_last[size_t(root)] = std::max(root_last[size_t(root)], plan.last_use[size_t(out)]);
      plan.skip_node[size_t(i)] = true;
      ++report.num_views;
      continue;
    }
    const int k = schema.inplace_input;
    if (!options.allow_inplace || k < 0 || size_t(k) >= node.inputs.size()) continue;
    const ValueId in = node.inputs[size_t(k)];
    const ValueId root = plan.storage[size_t(in)];
    if (is_external(root) || root_last[size_t(root)] != i) continue;  // external, or read later
    if (plan.bytes[size_t(in)] != plan.bytes[size_t(out)] ||
        graph.value(in).desc.dtype() != graph.value(out).desc.dtype())
      continue;
    // Another input sharing the buffer could be overwritten before the kernel reads it
    // (e.g. softmax's mask being a view of x), so in-place needs the buffer to be read
    // through input k alone.
    bool shared = false;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      if (j != size_t(k) && plan.storage[size_t(node.inputs[j])] == root) shared = true;
    }
    if (shared) continue;
    plan.storage[size_t(out)] = root;
    root_last[size_t(root)] = std::max(root_last[size_t(root)], plan.last_use[size_t(out)]);
    ++report.num_inplace;
  }

  for (size_t v = 0; v < nv; ++v) {
    if (plan.storage[v] == ValueId(v)) plan.last_use[v] = root_last[v];
  }

  // The arena buffers: intermediate roots.
  std::vector<Buffer> buffers;
  for (size_t v = 0; v < nv; ++v) {
    if (plan.storage[v] != ValueId(v) || is_external(ValueId(v))) continue;
    Buffer b;
    b.root = ValueId(v);
    LR_ASSIGN_OR_RETURN(b.size, aligned(plan.bytes[v], options.alignment, value_label(graph, ValueId(v))));
    b.first = plan.first_def[v];
    b.last = root_last[v];
    buffers.push_back(b);
  }
  report.num_values = int(buffers.size());

  // Greedy packing in several orders, keeping the smallest arena (the first order on ties):
  // by size (largest first: XNNPACK / TFLite), by lifetime length, and by size x lifetime.
  // Each places every buffer at the lowest offset free over its lifetime; which order packs
  // tighter depends on the graph (measured: combiner-axial at N = 8192 needs the second).
  // Ties fall back to first definition, then id, so the plan is deterministic.
  auto span = [](const Buffer* b) { return int64_t(b->last) - b->first + 1; };
  const std::function<bool(const Buffer*, const Buffer*)> keys[] = {
      [](const Buffer* a, const Buffer* b) { return a->size > b->size; },
      [&](const Buffer* a, const Buffer* b) { return span(a) > span(b); },
      [&](const Buffer* a, const Buffer* b) {
        return double(a->size) * double(span(a)) > double(b->size) * double(span(b));
      },
  };
  std::vector<int64_t> best_offsets;
  int64_t best_arena = -1;
  for (const auto& before : keys) {
    std::vector<Buffer*> order;
    for (Buffer& b : buffers) order.push_back(&b);
    std::sort(order.begin(), order.end(), [&](const Buffer* a, const Buffer* b) {
      if (before(a, b)) return true;
      if (before(b, a)) return false;
      if (a->size != b->size) return a->size > b->size;
      if (a->first != b->first) return a->first < b->first;
      return a->root < b->root;
    });
    std::vector<const Buffer*> placed;
    int64_t arena = 0;
    for (Buffer* b : order) {
      LR_RETURN_IF_ERROR(place(b, placed, options.alignment));
      placed.push_back(b);
      int64_t end = 0;
      if (!checked_add(b->offset, b->size, &end))
        return overflow_error("planner: arena size overflows int64");
      arena = std::max(arena, end);
    }
    if (best_arena < 0 || arena < best_arena) {
      best_arena = arena;
      best_offsets.clear();
      for (const Buffer& b : buffers) best_offsets.push_back(b.offset);
    }
  }
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i].offset = best_offsets[i];
  report.arena_bytes = std::max<int64_t>(best_arena, 0);

  plan.offset.assign(nv, -1);
  for (const Buffer& b : buffers) plan.offset[size_t(b.root)] = b.offset;
  for (size_t v = 0; v < nv; ++v) plan.offset[v] = plan.offset[size_t(plan.storage[v])];

  // The lower bound: bytes live at once, maximised over node steps (difference array over
  // the lifetime intervals; every arena buffer lives within [0, num_nodes - 1]).
  std::vector<int64_t> delta(size_t(num_nodes) + 1, 0);
  for (const Buffer& b : buffers) {
    LR_RETURN_IF_ERROR(add_bytes(&delta[size_t(b.first)], b.size, "live"));
    if (!checked_sub(delta[size_t(b.last) + 1], b.size, &delta[size_t(b.last) + 1]))
      return overflow_error("planner: total live bytes overflow int64");
  }
  int64_t live = 0;
  for (int i = 0; i < num_nodes; ++i) {
    LR_RETURN_IF_ERROR(add_bytes(&live, delta[size_t(i)], "live"));
    report.peak_live_bytes = std::max(report.peak_live_bytes, live);
  }

  // External memory. A weight's bytes count once, whichever values read them (a reshaped
  // weight is another weight value over the same bytes, graph.h).
  std::set<std::pair<const void*, int64_t>> weights_seen;
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = graph.values()[v];
    if (val.role == ValueRole::weight && weights_seen.insert({val.weight_data, plan.bytes[v]}).second)
      LR_RETURN_IF_ERROR(add_bytes(&report.weight_bytes_mapped, plan.bytes[v], "weight"));
    if (graph.values()[v].role == ValueRole::input)
      LR_RETURN_IF_ERROR(add_bytes(&report.input_bytes, plan.bytes[v], "input"));
    if (is_output[v]) LR_RETURN_IF_ERROR(add_bytes(&report.output_bytes, plan.bytes[v], "output"));
  }
  return plan;
}

std::string MemoryReport::to_string() const {
  auto mib = [](int64_t b) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%12.3f MiB  (%lld bytes)", double(b) / (1024.0 * 1024.0), (long long)b);
    return std::string(buf);
  };
  std::string ratio = "n/a";
  if (peak_live_bytes > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", double(arena_bytes) / double(peak_live_bytes));
    ratio = buf;
  } else if (arena_bytes == 0) {
    ratio = "1.000";
  }
  int64_t total = 0;
  for (int64_t b :
       {arena_bytes, weight_bytes_mapped, weight_bytes_copied, workspace_bytes, input_bytes, output_bytes}) {
    if (!checked_add(total, b, &total)) total = std::numeric_limits<int64_t>::max();
  }
  std::string s = "memory plan\n";
  s += "  arena (intermediates) " + mib(arena_bytes) + "\n";
  s += "  live peak (bound)     " + mib(peak_live_bytes) + "\n";
  s += "  arena / bound         " + ratio + "\n";
  s += "  weights mapped        " + mib(weight_bytes_mapped) + "\n";
  s += "  weights copied        " + mib(weight_bytes_copied) + "\n";
  s += "  workspace             " + mib(workspace_bytes) + "\n";
  s += "  inputs (caller)       " + mib(input_bytes) + "\n";
  s += "  outputs (caller)      " + mib(output_bytes) + "\n";
  s += "  total                 " + mib(total) + "\n";
  s += "  buffers " + std::to_string(num_values) + ", in-place " + std::to_string(num_inplace) + ", views " +
       std::to_string(num_views) + "\n";
  return s;
}

}  // namespace longrun
