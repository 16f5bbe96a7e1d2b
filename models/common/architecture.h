// The interface every model family implements, and the context its graph builder gets.
//
// A family (models/registry.cpp) parses its config into an Architecture. The Architecture
// then is the family's parameter table for that config (parameters()), its inputs and
// outputs, and its graph builder (build()). Model (models/model.cpp) does the rest: checks
// the file against the parameter table, binds weights, creates the graph inputs, checks that
// every declared output was produced and every parameter was used.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/weights.h"
#include "longrun/graph.h"
#include "longrun/models/model.h"

namespace longrun::models {

class GraphContext;

// The optional "attention_mask" input (u8/i32/i64/f32 [B, N], 1 = token, 0 = padding).
ModelInput attention_mask_input(std::string description);
// The inputs of a token encoder: required "input_ids" (i32/i64) and optional
// "attention_mask" (u8/i32/i64/f32), with their shape descriptions.
std::vector<ModelInput> token_model_inputs(std::string ids_description, std::string mask_description);
// "debug.embeddings", then per layer i "debug.layer<i>.filtered" (where filtered[i]: a
// spectral filter runs before the layer) and "debug.layer<i>.output".
std::vector<std::string> filtered_layer_debug_outputs(const std::vector<bool>& filtered);

class Architecture {
 public:
  virtual ~Architecture() = default;
  // The exact tensor set the file must hold (names, shapes, whether f16/bf16 can stay).
  virtual std::vector<ParamSpec> parameters() const = 0;
  virtual std::vector<ModelInput> inputs() const = 0;
  virtual std::vector<std::string> outputs() const = 0;
  // Names of the intermediates added with ModelOptions::debug_outputs ("debug.*").
  virtual std::vector<std::string> debug_outputs() const = 0;
  // The config with every field, as compact JSON.
  virtual std::string config_json() const = 0;
  // The longest input_ids length build() accepts, with the config field(s) it comes from;
  // nullopt where the family has no such limit.
  virtual std::optional<InputLengthLimit> max_input_length() const { return std::nullopt; }
  // Adds the model's nodes. Inputs are already graph inputs (ctx.input); the builder must
  // check their shapes (ctx.fail with a message naming the input) and produce every output.
  virtual void build(GraphContext& ctx) const = 0;
};

// What Architecture::build works with: the builder, the model's weights and the inputs.
class GraphContext {
 public:
  GraphContext(GraphBuilder& b, const WeightStore& weights, const ModelOptions& options)
      : b(b), weights_(weights), options_(options) {}

  GraphBuilder& b;

  // The graph input `name`, or kNoValue when the caller left that optional input out.
  ValueId input(std::string_view name) const;
  void add_input(const std::string& name, ValueId v) { inputs_[name] = v; }

  // The parameter `name` as a graph weight (bound once per graph). A name outside the
  // parameter table is an internal error (the table and the builder disagree).
  ValueId weight(std::string_view name);

  const TensorDesc& desc(ValueId v) const { return b.desc(v); }
  bool ok() const { return b.status().ok(); }
  void fail(Status s) { b.fail(std::move(s)); }

  // A model output (must be one of Architecture::outputs()).
  void output(ValueId v, const std::string& name);
  // A "debug.*" intermediate; ignored unless ModelOptions::debug_outputs. Debug outputs are
  // added to the graph by finish(), after the model outputs.
  void debug(ValueId v, const std::string& name);
  void finish();

  const std::map<std::string, ValueId, std::less<>>& bound_weights() const { return bound_; }
  const std::vector<std::string>& produced_outputs() const { return produced_; }

 private:
  const WeightStore& weights_;
  const ModelOptions& options_;
  std::map<std::string, ValueId, std::less<>> inputs_;
  std::map<std::string, ValueId, std::less<>> bound_;
  std::vector<std::string> produced_;
  std::vector<std::pair<ValueId, std::string>> pending_debug_;
};

}  // namespace longrun::models
