// linear_layer_weights (longrun/models/linear_weights.h).
#include "longrun/models/linear_weights.h"

#include <set>
#include <variant>
#include <vector>

namespace longrun {

std::map<std::string, ops::LinearWeight> linear_layer_weights(const Graph& graph) {
  std::map<ValueId, ops::LinearWeight> layout;
  std::set<ValueId> other;  // weights with a use that is not a linear layer
  for (const Node& node : graph.nodes()) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId v = node.inputs[i];
      if (graph.value(v).role != ValueRole::weight) continue;
      ops::LinearWeight l = ops::LinearWeight::none;
      if (i == 1 && node.kind == OpKind::matmul && std::holds_alternative<MatmulAttrs>(node.attrs) &&
          node.outputs.size() == 1) {
        std::vector<TensorDesc> in;
        for (ValueId x : node.inputs) in.push_back(graph.value(x).desc);
        l = ops::linear_weight_layout(std::get<MatmulAttrs>(node.attrs), in,
                                      graph.value(node.outputs[0]).desc);
      }
      if (l == ops::LinearWeight::none) {
        other.insert(v);
      } else if (auto [it, inserted] = layout.emplace(v, l); !inserted && it->second != l) {
        other.insert(v);
      }
    }
  }
  std::map<std::string, ops::LinearWeight> out;
  for (const auto& [v, l] : layout)
    if (!other.contains(v)) out[graph.value(v).name] = l;
  return out;
}

}  // namespace longrun
