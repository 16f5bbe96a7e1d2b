// The reference backend's f32 matmul for a quantized B (matmul_dequantized.h).
#include "backends/reference/matmul_dequantized.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "longrun/ops/reduced_precision.h"

namespace longrun::reference {
namespace {

// A quantized weight's f32 values q · scale, element for element.
struct DequantizedWeight {
  std::vector<float> values;
};

struct DequantizedState {
  const void* weight = nullptr;  // the quantized weight
  TensorDesc w_desc;
  std::shared_ptr<const DequantizedWeight> dequantized;
};

// One f32 copy per quantized weight while any prepared graph uses it: every matmul reading
// the weight, in every plan and session, shares it. The key is what the values depend on (the
// address and count of the contiguous q bytes, the scales' address and tiling; not the dims,
// so a reshaped weight shares its source's copy). A live entry's prepared graphs keep the
// weight's memory alive, so no other weight can occupy its addresses meanwhile.
struct Cache {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<const DequantizedWeight>> entries;
  void drop_expired() {
    for (auto it = entries.begin(); it != entries.end();)
      it = it->second.expired() ? entries.erase(it) : std::next(it);
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: prepared graphs may outlive static destruction
  return *c;
}

std::string cache_key(const Value& w) {
  char addresses[64];
  std::snprintf(addresses, sizeof addresses, "%p %p ", w.weight_data,
                static_cast<const void*>(w.scales.data));
  return addresses + std::to_string(w.scales.channels) + " " + std::to_string(w.scales.stride) + " " +
         std::to_string(w.desc.numel());
}

Result<std::shared_ptr<const DequantizedWeight>> dequantized_weight(const Value& w) {
  const std::string key = cache_key(w);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (auto it = c.entries.find(key); it != c.entries.end())
      if (auto live = it->second.lock()) return live;
  }
  LR_RETURN_IF_ERROR(host::reserve_weight_copy_bytes(w.desc.numel() * int64_t(sizeof(float))));
  auto fresh = std::make_shared<DequantizedWeight>();
  LR_ASSIGN_OR_RETURN(fresh->values, ops::dequantized_copy(w));
  std::lock_guard<std::mutex> lock(c.mutex);
  c.drop_expired();
  auto& slot = c.entries[key];
  if (auto live = slot.lock()) return live;  // made meanwhile by another preparation
  slot = fresh;
  return std::shared_ptr<const DequantizedWeight>(std::move(fresh));
}

}  // namespace

size_t dequantized_weight_entries() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.drop_expired();
  return c.entries.size();
}

Result<std::shared_ptr<void>> matmul_dequantized_prepare(const Graph& graph, const Node& node, ThreadPool*) {
  if (node.inputs.size() < 2) return std::shared_ptr<void>();
  const Value& w = graph.value(node.inputs[1]);
  if (w.desc.dtype() != DType::i8) return std::shared_ptr<void>();
  auto state = std::make_shared<DequantizedState>();
  auto dequantized = dequantized_weight(w);
  if (!dequantized.ok()) return dequantized.status().with_context("matmul '" + node.name + "'");
  state->dequantized = std::move(dequantized).value();
  state->weight = w.weight_data;
  state->w_desc = w.desc;
  return std::shared_ptr<void>(state);
}

Status reference_matmul_reading(const KernelArgs& args, const float* a, const float* b) {
  std::vector<TensorView> in(args.inputs.begin(), args.inputs.end());
  if (a != nullptr) in[0].data = const_cast<float*>(a);
  if (b != nullptr) {
    in[1].desc = TensorDesc(DType::f32, in[1].desc.dims());
    in[1].data = const_cast<float*>(b);
  }
  KernelArgs read = args;
  read.inputs = in;
  read.prepared = nullptr;
  return op_schema(OpKind::matmul).reference(read);
}

Status matmul_dequantized(const KernelArgs& args) {
  const auto* state = static_cast<const DequantizedState*>(args.prepared);
  if (args.inputs.size() >= 2 && args.inputs[1].desc.dtype() == DType::i8) {
    if (state == nullptr || args.inputs[1].data != state->weight || args.inputs[1].desc != state->w_desc)
      return invalid_argument("reference matmul: a quantized (i8) B other than the one prepared");
    return reference_matmul_reading(args, nullptr, state->dequantized->values.data());
  }
  return reference_matmul_reading(args, nullptr, nullptr);
}

}  // namespace longrun::reference
