#include "longrun/graph.h"

#include <set>
#include <string>

#include "longrun/ops/schema.h"

namespace longrun {

Status Graph::verify() const {
  const size_t nv = values_.size();
  std::vector<int> producer(nv, -1);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    const std::string where =
        "node " + std::to_string(n) + " '" + node.name + "' (" + std::string(op_name(node.kind)) + ")";
    std::vector<TensorDesc> in;
    for (ValueId v : node.inputs) {
      if (v < 0 || size_t(v) >= nv)
        return invalid_argument(where + ": input id " + std::to_string(v) + " out of range");
      const Value& val = values_[size_t(v)];
      if (val.role == ValueRole::intermediate && (producer[size_t(v)] < 0))
        return invalid_argument(where + ": input '" + val.name + "' is used before it is produced");
      in.push_back(val.desc);
      if (val.desc.dtype() == DType::i8 && !(node.kind == OpKind::matmul && in.size() == 2))
        return invalid_argument(where + ": input " + std::to_string(in.size() - 1) + " '" + val.name +
                                "' is i8, a quantized weight, which only a matmul reads (as B)");
    }
    std::vector<TensorDesc> out;
    LR_RETURN_IF_ERROR(infer_op(node.kind, node.attrs, in, &out).with_context(where));
    if (out.size() != node.outputs.size())
      return invalid_argument(where + ": has " + std::to_string(node.outputs.size()) +
                              " outputs, op defines " + std::to_string(out.size()));
    for (size_t o = 0; o < out.size(); ++o) {
      const ValueId v = node.outputs[o];
      if (v < 0 || size_t(v) >= nv) return invalid_argument(where + ": output id out of range");
      const Value& val = values_[size_t(v)];
      if (val.role != ValueRole::intermediate)
        return invalid_argument(where + ": writes input/weight '" + val.name + "'");
      if (producer[size_t(v)] >= 0)
        return invalid_argument(where + ": value '" + val.name + "' has two producers");
      if (!(val.desc == out[o]))
        return invalid_argument(where + ": output '" + val.name + "' is " + val.desc.to_string() +
                                ", inference gives " + out[o].to_string());
      producer[size_t(v)] = int(n);
    }
  }
  std::set<std::string> names;
  for (ValueId v : inputs_) {
    if (v < 0 || size_t(v) >= nv || values_[size_t(v)].role != ValueRole::input)
      return invalid_argument("graph input list names a value that is not an input");
    if (!names.insert(values_[size_t(v)].name).second)
      return invalid_argument("duplicate graph input name '" + values_[size_t(v)].name + "'");
  }
  names.clear();
  for (ValueId v : outputs_) {
    if (v < 0 || size_t(v) >= nv || producer[size_t(v)] < 0)
      return invalid_argument("graph output is not produced by any node");
    if (!names.insert(values_[size_t(v)].name).second)
      return invalid_argument("duplicate graph output name '" + values_[size_t(v)].name + "'");
  }
  if (outputs_.empty()) return invalid_argument("graph has no outputs");
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = values_[v];
    if (val.role == ValueRole::weight && val.weight_data == nullptr && val.desc.numel() > 0)
      return invalid_argument("weight '" + val.name + "' has no data");
    if (val.desc.dtype() == DType::i8) {
      if (val.role != ValueRole::weight || !val.desc.is_contiguous() || !scales_tile(val.desc, val.scales))
        return invalid_argument(
            "value '" + val.name + "' " + val.desc.to_string() +
            ": an i8 value must be a contiguous quantized weight whose channel scales tile it");
    } else if (val.scales.data != nullptr) {
      return invalid_argument("value '" + val.name + "' " + val.desc.to_string() +
                              " has channel scales but is not i8");
    }
    if (val.role == ValueRole::intermediate && producer[v] < 0)
      return invalid_argument("value '" + val.name + "' has no producer");
  }
  return {};
}

bool scales_tile(const TensorDesc& desc, const ChannelScales& s) {
  const int64_t n = desc.numel();
  if (s.data == nullptr || s.channels <= 0 || s.stride <= 0) return false;
  if (n == 0) return true;
  return s.channels <= n / s.stride && n % (s.channels * s.stride) == 0;
}

void dequantize_weight(const Value& w, float* dst) {
  const auto* q = static_cast<const int8_t*>(w.weight_data);
  const int64_t n = w.desc.numel(), stride = w.scales.stride, channels = w.scales.channels;
  for (int64_t i = 0; i < n; ++i) dst[i] = float(q[i]) * w.scales.data[(i / stride) % channels];
}

ValueId Graph::find_input(std::string_view name) const {
  for (ValueId v : inputs_)
    if (values_[size_t(v)].name == name) return v;
  return kNoValue;
}

ValueId Graph::find_output(std::string_view name) const {
  for (ValueId v : outputs_)
    if (values_[size_t(v)].name == name) return v;
  return kNoValue;
}

std::string Graph::to_string() const {
  std::string s;
  for (const Node& n : nodes_) {
    s += n.name + ": ";
    for (size_t o = 0; o < n.outputs.size(); ++o)
      s += (o ? ", " : "") + values_[size_t(n.outputs[o])].desc.to_string();
    s += " = " + std::string(op_name(n.kind)) + "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value& v = values_[size_t(n.inputs[i])];
      s += (i ? ", " : "") + v.name + " " + v.desc.to_string();
    }
    s += ")\n";
  }
  return s;
}

}  // namespace longrun
