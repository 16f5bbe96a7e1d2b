// The Combiner model class shared by combiner.cpp (parameters, config, the full forward
// graph) and combiner_step.cpp (the cached one-token step graphs of the causal forms).
// Internal to the models library: users reach it through parse_combiner_config.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "combiner/combiner_attention.h"
#include "common/architecture.h"
#include "common/blocks.h"
#include "lm/causal_lm.h"

namespace longrun::models {

inline constexpr float kCombinerLayerNormEps = 1e-6f;  // flax nn.LayerNorm default, as the JAX code

struct CombinerConfig {
  int64_t vocab_size = 0;
  int64_t emb_dim = 0;
  int64_t num_heads = 0;
  int64_t qkv_dim = 0;
  int64_t mlp_dim = 0;
  int64_t num_layers = 0;
  int64_t max_len = 0;
  int64_t max_seg_len = 0;  // 0 for logsparse when absent
  std::string attention;
  combiner::Form form;
};

// Flax WMT sinusoidal table [rows, d], concatenated sin | cos halves.
std::vector<float> combiner_sinusoid(int64_t rows, int64_t d);

// The JAX module name of the attention form, e.g. "_SelfAttSqrtn_0".
const char* combiner_attention_module(combiner::Variant v);

// "autoreg_model/transformer_layer_<l>/".
std::string combiner_layer_prefix(int64_t l);

// One layer's caches in a step graph (lm/causal_lm.h): "past.<layer><name>" are inputs; the
// step sets each cache's next value, and emit() outputs them as "present.<layer><name>" in the
// order of the step spec (the order CachedSteps feeds them back in). A cache's dtype is its
// past input's (bf16 for some caches in a bf16 session, lm/causal_lm.h): the step computes
// in f32, so a bf16 cache is read through a cast to f32 and a new value is rounded to bf16
// before it is stored; an f32 cache gets no cast.
class StepCaches {
 public:
  StepCaches(GraphContext& c, std::string layer, std::string node_prefix)
      : c_(c), layer_(std::move(layer)), prefix_(std::move(node_prefix)) {}
  // The cache's value before this step, in f32.
  ValueId past(const std::string& name);
  // where(at, now, past(name)) (at broadcasts: the slots written this step) in the cache's
  // dtype, as the next value; returned in f32.
  ValueId update(ValueId now, const std::string& name, ValueId at);
  // `value` (f32) as the cache's next value; returned as stored, in f32.
  ValueId set(ValueId value, const std::string& name);
  void emit(const LmStepSpec& spec);

 private:
  ValueId stored(const std::string& name) const { return c_.input("past." + layer_ + name); }
  DType dtype(const std::string& name) const;
  ValueId to_f32(ValueId v, const std::string& node) const;
  // v (f32) in the cache's dtype: a cast named node + ".to_cache" unless the cache is f32.
  ValueId to_cache(ValueId v, const std::string& name, const std::string& node) const;
  // Sets v (in the cache's dtype) as the cache's next value; returns it in f32.
  ValueId keep(ValueId v, const std::string& name, const std::string& node);

  GraphContext& c_;
  std::string layer_, prefix_;
  std::map<std::string, ValueId> next_, past_f32_;
};

class Combiner final : public Architecture, public CausalLm {
 public:
  explicit Combiner(CombinerConfig cfg) : cfg_(std::move(cfg)) {}

  std::vector<ParamSpec> parameters() const override;

  std::vector<ModelInput> inputs() const override;

  std::vector<std::string> outputs() const override { return {"last_hidden_state", "logits"}; }

  std::vector<std::string> debug_outputs() const override;

  std::string config_json() const override;

  std::optional<InputLengthLimit> max_input_length() const override {
    return InputLengthLimit{cfg_.max_len, "max_len of the config"};
  }

  void build(GraphContext& c) const override;

  LmStepSpec step_spec() const override;
  void build_step(GraphContext& c) const override;

 private:
  struct StepHeads {
    ValueId q, k, v;  // [R, H, 1, hd] (q scaled)
    ValueId h;        // the layer's LN0 output [R, 1, D]
  };
  ValueId step_fixed(GraphContext& c, const StepHeads& x, StepCaches& caches, const std::string& a) const;
  ValueId step_logsparse(GraphContext& c, const StepHeads& x, StepCaches& caches, const std::string& a) const;
  ValueId step_axial(GraphContext& c, const StepHeads& x, StepCaches& caches, const std::string& a) const;
  ValueId step_mixture(GraphContext& c, const StepHeads& x, StepCaches& caches, const std::string& a) const;

  // Flax numbers DenseGeneral modules in creation order: axial 'proj' creates W1 and W2 first.
  bool axial_projections() const {
    return cfg_.form.variant == combiner::Variant::axial &&
           cfg_.form.row_summary == combiner::RowSummaryMode::proj;
  }
  const char* output_module() const { return axial_projections() ? "DenseGeneral_2" : "DenseGeneral_0"; }

  // x [.., D] times a DenseGeneral kernel viewed as [in, out].
  ValueId dense_general(GraphContext& c, ValueId x, const std::string& kernel, int64_t in, int64_t out,
                        float alpha = 1.0f) const {
    const ValueId w = reshape(c, c.weight(kernel), {in, out});
    return c.b.matmul({x, w}, {.alpha = alpha}, kernel);
  }

  ValueId layer_norm(GraphContext& c, ValueId x, const std::string& prefix) const {
    return c.b.layer_norm({x, c.weight(prefix + "/scale"), c.weight(prefix + "/bias")},
                          {.eps = kCombinerLayerNormEps}, prefix);
  }

  ValueId dense(GraphContext& c, ValueId x, const std::string& prefix, Activation act) const {
    return c.b.matmul({x, c.weight(prefix + "/kernel"), c.weight(prefix + "/bias")},
                      {.has_bias = true, .activation = act}, prefix);
  }

  ValueId attention(GraphContext& c, ValueId h, int64_t l, ValueId key_mask) const;

  CombinerConfig cfg_;
};

}  // namespace longrun::models
