// Graph and GraphBuilder. A Graph is a static-shape DAG of op nodes over values (graph
// inputs, weights, intermediates), in topological node order. GraphBuilder has one method
// per op (generated from op_list.inc) and runs each op's shape inference as it goes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "longrun/ops/attrs.h"
#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

enum class ValueRole : uint8_t { input, weight, intermediate };

// The per-channel scales of a quantized weight (dtype i8, docs/checkpoints.md#quantized-weights):
// element i of the weight, in row-major order, stands for float(q[i]) · data[(i / stride) %
// channels] (one f32 multiply). A linear layer's W[N, K] (nk) has N channels of stride K, its
// W[K, N] (kn) N channels of stride 1. A reshape keeps the row-major order, so a reshaped
// weight keeps its scales as they are.
struct ChannelScales {
  const float* data = nullptr;  // [channels], finite and >= 0
  int64_t channels = 0;
  int64_t stride = 0;
};

struct Value {
  std::string name;
  TensorDesc desc;
  ValueRole role = ValueRole::intermediate;
  bool is_output = false;
  int producer = -1;                  // node index, -1 for inputs and weights
  const void* weight_data = nullptr;  // weights only: host bytes laid out as desc says
  ChannelScales scales;               // i8 weights only: what their values are multiplied by
};

// Whether `s` describes the channels of an i8 weight of `desc`: scales present, channels and
// stride >= 1, channels · stride dividing the element count (any count when it is 0).
bool scales_tile(const TensorDesc& desc, const ChannelScales& s);

// The f32 values of a quantized weight `w` (dtype i8): dst[i] = float(q[i]) · scale of i's
// channel, for all w.desc.numel() elements (w is contiguous).
void dequantize_weight(const Value& w, float* dst);

struct Node {
  OpKind kind = OpKind::matmul;
  OpAttrs attrs;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::string name;
};

class Graph {
 public:
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Value& value(ValueId id) const { return values_[size_t(id)]; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }

  // Checks structure (ids in range, topological order, one producer per value, unique
  // input/output names, weights have data, an i8 value is a quantized weight with scales that
  // only matmuls read, as their B) and re-runs every op's shape/dtype inference
  // against the stored descs. Errors name the node and value.
  Status verify() const;

  // Input or output value by name; kNoValue when absent.
  ValueId find_input(std::string_view name) const;
  ValueId find_output(std::string_view name) const;

  // One line per node: "matmul_3: f32[4,8] = matmul(x f32[4,16], w f32[8,16]) {...}".
  std::string to_string() const;

 private:
  friend class GraphBuilder;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  // Owners of weight memory (mmapped files, copies) that must outlive the graph.
  std::vector<std::shared_ptr<const void>> keepalive_;
};

// Builds a Graph. Errors are sticky: the first failing call records its Status (naming
// the node) and returns kNoValue; later calls with kNoValue inputs do nothing; build()
// returns the first error. So model code can chain calls and check once.
class GraphBuilder {
 public:
  ValueId input(std::string name, const TensorDesc& desc);
  // `data` must stay valid while the graph lives; pass `owner` to tie its lifetime to the
  // graph.
  ValueId weight(std::string name, const TensorDesc& desc, const void* data,
                 std::shared_ptr<const void> owner = nullptr);
  // A quantized weight: i8 values q (desc's shape, contiguous) and their scales, which `owner`
  // keeps alive with q. Errors: another dtype, scales that do not tile desc's elements.
  ValueId quantized_weight(std::string name, const TensorDesc& desc, const int8_t* q, ChannelScales scales,
                           std::shared_ptr<const void> owner);
  // Marks a value as a graph output under `name`.
  void output(ValueId v, std::string name);

  // Generic form: any op by kind.
  ValueId op(OpKind kind, const OpAttrs& attrs, const std::vector<ValueId>& inputs, std::string name = {});

  // One method per op, e.g. b.softmax({x}, {.axis = -1}), b.matmul({a, w}, {.trans_b = true}).
#define LR_OP(name, Attrs) \
  ValueId name(const std::vector<ValueId>& inputs, const Attrs& attrs = {}, std::string node_name = {});
#include "longrun/ops/op_list.inc"

  // Output `index` of the node that produced `first` (its output 0), for ops with several
  // outputs; kNoValue (and a sticky error) when there is no such output.
  ValueId output_of(ValueId first, int index);

  const TensorDesc& desc(ValueId v) const { return g_.values_[size_t(v)].desc; }
  const Status& status() const { return status_; }
  // Sets the sticky error (used by model code for its own checks).
  void fail(Status s);

  // Verifies and returns the graph; the builder is left empty. A reshape of a weight (not
  // a graph output) becomes a weight itself, the same bytes (and scales) under the new desc, and its node
  // goes: backends see every reshaped model constant as a constant operand (the cpu backend
  // prepacks it as a matmul's B; at int8 and bf16 it is a linear layer's weight).
  Result<Graph> build();

 private:
  void fold_weight_views();
  Graph g_;
  Status status_;
  int counter_ = 0;
};

}  // namespace longrun
