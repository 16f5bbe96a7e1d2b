#include <string>
#include <utility>
#include <vector>

#include "longrun/graph.h"
#include "longrun/ops/schema.h"

namespace longrun {

void GraphBuilder::fail(Status s) {
  if (status_.ok() && !s.ok()) status_ = std::move(s);
}

ValueId GraphBuilder::input(std::string name, const TensorDesc& desc) {
  if (!status_.ok()) return kNoValue;
  if (name.empty()) {
    fail(invalid_argument("graph input with an empty name"));
    return kNoValue;
  }
  if (!desc.is_contiguous()) {
    fail(invalid_argument("graph input '" + name + "' must be contiguous, found " + desc.to_string()));
    return kNoValue;
  }
  if (desc.dtype() == DType::i8) {
    fail(invalid_argument("graph input '" + name + "': dtype i8 is only a quantized weight's"));
    return kNoValue;
  }
  const ValueId id = ValueId(g_.values_.size());
  g_.values_.push_back(Value{std::move(name), desc, ValueRole::input, false, -1, nullptr});
  g_.inputs_.push_back(id);
  return id;
}

ValueId GraphBuilder::weight(std::string name, const TensorDesc& desc, const void* data,
                             std::shared_ptr<const void> owner) {
  if (!status_.ok()) return kNoValue;
  if (data == nullptr && desc.numel() > 0) {
    fail(invalid_argument("weight '" + name + "' has no data"));
    return kNoValue;
  }
  if (desc.dtype() == DType::i8) {
    fail(invalid_argument("weight '" + name + "': an i8 weight is a quantized one, with scales"));
    return kNoValue;
  }
  const ValueId id = ValueId(g_.values_.size());
  g_.values_.push_back(Value{std::move(name), desc, ValueRole::weight, false, -1, data});
  if (owner) g_.keepalive_.push_back(std::move(owner));
  return id;
}

ValueId GraphBuilder::quantized_weight(std::string name, const TensorDesc& desc, const int8_t* q,
                                       ChannelScales scales, std::shared_ptr<const void> owner) {
  if (!status_.ok()) return kNoValue;
  if (desc.dtype() != DType::i8 || !desc.is_contiguous() || (q == nullptr && desc.numel() > 0) ||
      !scales_tile(desc, scales)) {
    fail(invalid_argument("quantized weight '" + name + "' " + desc.to_string() +
                          ": expected contiguous i8 data and " + std::to_string(scales.channels) +
                          " channel scales of stride " + std::to_string(scales.stride) +
                          " that tile its elements"));
    return kNoValue;
  }
  const ValueId id = ValueId(g_.values_.size());
  g_.values_.push_back(Value{std::move(name), desc, ValueRole::weight, false, -1, q, scales});
  if (owner) g_.keepalive_.push_back(std::move(owner));
  return id;
}

void GraphBuilder::output(ValueId v, std::string name) {
  if (!status_.ok()) return;
  if (v < 0 || size_t(v) >= g_.values_.size()) {
    fail(invalid_argument("graph output '" + name + "': invalid value id " + std::to_string(v)));
    return;
  }
  Value& val = g_.values_[size_t(v)];
  if (val.role != ValueRole::intermediate || val.is_output) {
    fail(invalid_argument("graph output '" + name + "': value '" + val.name +
                          "' must be produced by a node and be output only once"));
    return;
  }
  val.is_output = true;
  val.name = std::move(name);
  g_.outputs_.push_back(v);
}

ValueId GraphBuilder::op(OpKind kind, const OpAttrs& attrs, const std::vector<ValueId>& inputs,
                         std::string name) {
  if (!status_.ok()) return kNoValue;
  const int index = int(g_.nodes_.size());
  if (name.empty()) name = std::string(op_name(kind)) + "_" + std::to_string(counter_++);
  std::vector<TensorDesc> in;
  in.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueId v = inputs[i];
    if (v < 0 || size_t(v) >= g_.values_.size()) {
      fail(invalid_argument("node '" + name + "': input " + std::to_string(i) +
                            " is not a value of this graph"));
      return kNoValue;
    }
    in.push_back(g_.values_[size_t(v)].desc);
    // A quantized weight is a matmul's B, or reshaped (folded into a weight at build).
    if (in.back().dtype() == DType::i8 && !(kind == OpKind::matmul && i == 1) && kind != OpKind::reshape) {
      fail(invalid_argument("node '" + name + "' (" + std::string(op_name(kind)) + "): input " +
                            std::to_string(i) + " '" + g_.values_[size_t(v)].name +
                            "' is i8, a quantized weight, which only a matmul reads (as B)"));
      return kNoValue;
    }
  }
  std::vector<TensorDesc> out;
  Status st = infer_op(kind, attrs, in, &out);
  if (!st.ok()) {
    fail(st.with_context("node '" + name + "'"));
    return kNoValue;
  }
  Node node{kind, attrs, inputs, {}, name};
  for (size_t o = 0; o < out.size(); ++o) {
    const ValueId id = ValueId(g_.values_.size());
    g_.values_.push_back(
        Value{name + ":" + std::to_string(o), out[o], ValueRole::intermediate, false, index, nullptr});
    node.outputs.push_back(id);
  }
  g_.nodes_.push_back(std::move(node));
  return g_.nodes_.back().outputs[0];
}

#define LR_OP(name, Attrs)                                                           \
  ValueId GraphBuilder::name(const std::vector<ValueId>& inputs, const Attrs& attrs, \
                             std::string node_name) {                                \
    return op(OpKind::name, OpAttrs{attrs}, inputs, std::move(node_name));           \
  }
#include "longrun/ops/op_list.inc"

ValueId GraphBuilder::output_of(ValueId first, int index) {
  if (!status_.ok() || first == kNoValue) return kNoValue;
  const std::string what = "output_of(value " + std::to_string(first) + ", " + std::to_string(index) + "): ";
  const int node = first >= 0 && size_t(first) < g_.values_.size() ? g_.values_[size_t(first)].producer : -1;
  if (node < 0) {
    fail(invalid_argument(what + "the value has no producer (an input, a weight or not in this graph)"));
    return kNoValue;
  }
  const std::vector<ValueId>& outs = g_.nodes_[size_t(node)].outputs;
  if (outs[0] != first) {
    fail(invalid_argument(what + "the value is not output 0 of node '" + g_.nodes_[size_t(node)].name + "'"));
    return kNoValue;
  }
  if (index < 0 || size_t(index) >= outs.size()) {
    fail(invalid_argument(what + "node '" + g_.nodes_[size_t(node)].name + "' has no output " +
                          std::to_string(index) + " (it has " + std::to_string(outs.size()) + ")"));
    return kNoValue;
  }
  return outs[size_t(index)];
}

namespace {

// Whether node n is a reshape of a weight that can become a weight itself: the same bytes
// read under the output's desc (a contiguous weight read row-major, as the reshape's view
// does), not a graph output (those live in caller memory).
bool weight_view(const std::vector<Value>& values, const Node& n) {
  if (n.kind != OpKind::reshape || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
  const Value& in = values[size_t(n.inputs[0])];
  const Value& out = values[size_t(n.outputs[0])];
  return in.role == ValueRole::weight && in.weight_data != nullptr && in.desc.is_contiguous() &&
         out.desc.is_contiguous() && !out.is_output && out.desc.dtype() == in.desc.dtype() &&
         out.desc.nbytes() == in.desc.nbytes();
}

}  // namespace

void GraphBuilder::fold_weight_views() {
  std::vector<int> new_index(g_.nodes_.size(), -1);
  std::vector<Node> kept;
  for (size_t i = 0; i < g_.nodes_.size(); ++i) {
    Node& n = g_.nodes_[i];
    if (weight_view(g_.values_, n)) {  // in order, so a reshape of a folded reshape folds too
      const Value& in = g_.values_[size_t(n.inputs[0])];
      Value& out = g_.values_[size_t(n.outputs[0])];
      out.name = in.name + ":" + n.name;
      out.role = ValueRole::weight;
      out.producer = -1;
      out.weight_data = in.weight_data;
      out.scales = in.scales;
      continue;
    }
    new_index[i] = int(kept.size());
    kept.push_back(std::move(n));
  }
  if (kept.size() == g_.nodes_.size()) {
    g_.nodes_ = std::move(kept);
    return;
  }
  for (Value& v : g_.values_)
    if (v.producer >= 0) v.producer = new_index[size_t(v.producer)];
  g_.nodes_ = std::move(kept);
}

Result<Graph> GraphBuilder::build() {
  if (!status_.ok()) return status_;
  fold_weight_views();
  LR_RETURN_IF_ERROR(g_.verify());
  Graph g = std::move(g_);
  g_ = Graph{};
  counter_ = 0;
  return g;
}

}  // namespace longrun
