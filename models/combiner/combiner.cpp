// combiner: the JAX LanguageModel around the Combiner attention forms (MODELS.md §2.1):
//
//   ids padded with 0 to Np = ceil(N / s) * s (JAX runs at max_len; same for real positions)
//   X = Embed[ids] + PE[0..Np-1]            (Flax WMT sinusoid, sin | cos halves)
//   per layer (pre-LN, eps 1e-6):
//     h = LN_0(X); q = h Wq / sqrt(hd), k = h Wk, v = h Wv   (no biases, heads [B, H, Np, hd])
//     X = X + out(combiner_attention(q, k, v))              (combiner_attention.h)
//     X = X + Dense_1(relu(Dense_0(LN_1(X))))
//   last_hidden_state = LN(X)[:, :N]; logits = last_hidden_state K_head + b_head
#include "combiner/combiner.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "combiner/combiner_attention.h"
#include "common/blocks.h"
#include "common/config.h"
#include "lm/causal_lm.h"

namespace longrun::models {
namespace {

using combiner::Form;
using combiner::Pooling;
using combiner::Variant;

constexpr float kLayerNormEps = 1e-6f;  // flax nn.LayerNorm default, as the JAX code

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
  Form form;
};

const char* attention_module(Variant v) {
  switch (v) {
    case Variant::fixed: return "_SelfAttSqrtn_0";
    case Variant::logsparse: return "_SelfAttLogn_0";
    case Variant::axial: return "_SelfAttAxialRowmajor_0";
    default: return "_AxialMixtureAtt_0";
  }
}

std::string layer_prefix(int64_t l) { return "autoreg_model/transformer_layer_" + std::to_string(l) + "/"; }

// Flax WMT sinusoidal table, concatenated halves: column j < D/2 is sin(p e^{-j ln(1e4)/(D/2-1)}),
// column D/2 + j the cos of the same angle. Computed in double, rounded once.
std::vector<float> sinusoid(int64_t rows, int64_t d) {
  const int64_t half = d / 2;
  const double step = half > 1 ? std::log(1e4) / double(half - 1) : 0.0;
  std::vector<float> pe(size_t(rows * d));
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t j = 0; j < half; ++j) {
      const double a = double(p) * std::exp(-double(j) * step);
      pe[size_t(p * d + j)] = float(std::sin(a));
      pe[size_t(p * d + half + j)] = float(std::cos(a));
    }
  return pe;
}

class Combiner final : public Architecture, public CausalLm {
 public:
  explicit Combiner(CombinerConfig cfg) : cfg_(std::move(cfg)) {}

  std::vector<ParamSpec> parameters() const override {
    const int64_t d = cfg_.emb_dim, h = cfg_.num_heads, hd = cfg_.qkv_dim / cfg_.num_heads, m = cfg_.mlp_dim;
    std::vector<ParamSpec> t;
    auto layer_norm = [&](const std::string& p) {
      t.push_back({p + "/scale", {d}, true});
      t.push_back({p + "/bias", {d}, true});
    };
    auto dense = [&](const std::string& p, int64_t in, int64_t out) {
      t.push_back({p + "/kernel", {in, out}, true});
      t.push_back({p + "/bias", {out}, false});
    };
    t.push_back({"Embed_0/embedding", {cfg_.vocab_size, d}, true});
    for (int64_t l = 0; l < cfg_.num_layers; ++l) {
      const std::string p = layer_prefix(l), a = p + attention_module(cfg_.form.variant) + "/";
      layer_norm(p + "LayerNorm_0");
      for (const char* k : {"query", "key", "value"}) t.push_back({a + k + "/kernel", {d, h, hd}, false});
      if (cfg_.form.variant == Variant::axial) {
        t.push_back({a + "DenseGeneral_0/kernel", {h, hd, d}, false});
        layer_norm(a + "LayerNorm_0");
        t.push_back({a + "DenseGeneral_1/kernel", {d, h, hd}, false});
      }
      t.push_back({a + output_module() + "/kernel", {h, hd, d}, false});
      layer_norm(p + "LayerNorm_1");
      dense(p + "MlpBlock_0/Dense_0", d, m);
      dense(p + "MlpBlock_0/Dense_1", m, d);
    }
    layer_norm("autoreg_model/LayerNorm_0");
    dense("autoreg_model/Dense_0", d, cfg_.vocab_size);
    return t;
  }

  std::vector<ModelInput> inputs() const override {
    std::vector<ModelInput> in = {{"input_ids",
                                   true,
                                   {DType::i32, DType::i64},
                                   "[B, N] token ids, N <= " + std::to_string(cfg_.max_len)}};
    if (cfg_.form.key_padding)
      in.push_back(attention_mask_input("[B, N] 1 = token, 0 = padding (default: all ones)"));
    return in;
  }

  std::vector<std::string> outputs() const override { return {"last_hidden_state", "logits"}; }

  std::vector<std::string> debug_outputs() const override {
    // The first layer only: enough to point a mismatch at the attention form, the summaries or
    // the rest of the layer, without doubling the size of every golden.
    if (cfg_.num_layers == 0) return {};
    std::vector<std::string> out;  // in the order the builder produces them
    if (cfg_.form.variant != Variant::logsparse) out.push_back("debug.layer0.summary_keys");
    out.push_back("debug.layer0.attention");
    out.push_back("debug.layer0.output");
    return out;
  }

  std::string config_json() const override {
    nlohmann::json j = {{"vocab_size", cfg_.vocab_size}, {"emb_dim", cfg_.emb_dim},
                        {"num_heads", cfg_.num_heads},   {"qkv_dim", cfg_.qkv_dim},
                        {"mlp_dim", cfg_.mlp_dim},       {"num_layers", cfg_.num_layers},
                        {"max_len", cfg_.max_len},       {"attention", cfg_.attention},
                        {"causal", cfg_.form.causal},    {"key_padding", cfg_.form.key_padding}};
    if (cfg_.form.variant != Variant::logsparse) j["max_seg_len"] = cfg_.max_seg_len;
    if (cfg_.form.variant == Variant::mixture && !cfg_.form.causal)
      j["pooling"] = cfg_.form.pooling == Pooling::sum ? "sum" : "max";
    return j.dump();
  }

  void build(GraphContext& c) const override;

  LmStepSpec step_spec() const override;
  void build_step(GraphContext& c) const override;

 private:
  struct StepHeads {
    ValueId q, k, v;  // [R, H, 1, hd] (q scaled)
    ValueId h;        // the layer's LN0 output [R, 1, D]
  };
  ValueId step_fixed(GraphContext& c, const StepHeads& x, const std::string& cache,
                     const std::string& a) const;
  ValueId step_axial(GraphContext& c, const StepHeads& x, const std::string& cache,
                     const std::string& a) const;

 private:
  const char* output_module() const {
    return cfg_.form.variant == Variant::axial ? "DenseGeneral_2" : "DenseGeneral_0";
  }

  // x [.., D] times a DenseGeneral kernel viewed as [in, out].
  ValueId dense_general(GraphContext& c, ValueId x, const std::string& kernel, int64_t in, int64_t out,
                        float alpha = 1.0f) const {
    const ValueId w = reshape(c, c.weight(kernel), {in, out});
    return c.b.matmul({x, w}, {.alpha = alpha}, kernel);
  }

  ValueId layer_norm(GraphContext& c, ValueId x, const std::string& prefix) const {
    return c.b.layer_norm({x, c.weight(prefix + "/scale"), c.weight(prefix + "/bias")},
                          {.eps = kLayerNormEps}, prefix);
  }

  ValueId dense(GraphContext& c, ValueId x, const std::string& prefix, Activation act) const {
    return c.b.matmul({x, c.weight(prefix + "/kernel"), c.weight(prefix + "/bias")},
                      {.has_bias = true, .activation = act}, prefix);
  }

  ValueId attention(GraphContext& c, ValueId h, int64_t l, ValueId key_mask) const;

  CombinerConfig cfg_;
};

ValueId Combiner::attention(GraphContext& c, ValueId h, int64_t l, ValueId key_mask) const {
  const std::string a = layer_prefix(l) + attention_module(cfg_.form.variant) + "/";
  const int64_t d = cfg_.emb_dim, heads = cfg_.num_heads, hd = cfg_.qkv_dim / heads, hh = cfg_.qkv_dim;
  auto project = [&](const char* what, float alpha) {
    return split_heads(c, dense_general(c, h, a + what + "/kernel", d, hh, alpha), heads, hd);
  };
  combiner::Heads x{.q = project("query", float(1.0 / std::sqrt(double(hd)))),
                    .k = project("key", 1.0f),
                    .v = project("value", 1.0f),
                    .key_mask = key_mask};
  // Axial: K~ = W2 LN'(W1 R + h), R in rows layout [B, H, n, s, hd].
  const combiner::RowSummary row_summary = [&](ValueId r) {
    if (!c.ok()) return kNoValue;
    const TensorDesc rd = c.desc(r);
    const int64_t b = rd.dim(0), np = rd.dim(2) * rd.dim(3);
    const ValueId merged = reshape(c, transpose(c, r, {0, 2, 3, 1, 4}), {b, np, hh});
    const ValueId w1 =
        c.b.add({dense_general(c, merged, a + "DenseGeneral_0/kernel", hh, d), h}, {}, a + "W1.residual");
    const ValueId w2 =
        dense_general(c, layer_norm(c, w1, a + "LayerNorm_0"), a + "DenseGeneral_1/kernel", d, hh);
    return reshape(c, split_heads(c, w2, heads, hd), {rd.dim(0), rd.dim(1), rd.dim(2), rd.dim(3), rd.dim(4)});
  };
  const std::string debug = l == 0 ? "debug.layer0" : "";
  const ValueId y = combiner::combiner_attention(c, cfg_.form, x, row_summary, a + "combiner", debug);
  return dense_general(c, merge_heads(c, y), a + output_module() + "/kernel", hh, d);
}

LmStepSpec Combiner::step_spec() const {
  LmStepSpec s;
  s.vocab = cfg_.vocab_size, s.max_len = cfg_.max_len;
  const Variant v = cfg_.form.variant;
  if (v != Variant::fixed && v != Variant::axial) {
    s.unsupported = std::string("combiner attention \"") + cfg_.attention + "\" has no cached step yet";
    return s;
  }
  s.segment = cfg_.form.segment, s.summaries = cfg_.max_len / cfg_.form.segment;
  const int64_t h = cfg_.num_heads, hd = cfg_.qkv_dim / h, seg = s.segment;
  if (v == Variant::fixed)
    s.inputs = {"ids",          "position",      "write_slot",   "direct_keep",
                "summary_keep", "summary_write", "segment_start"};
  else
    s.inputs = {"ids", "position", "row_write", "row_keep", "row_slots", "column_keep"};
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    const std::string p = std::to_string(l) + ".";
    if (v == Variant::fixed) {
      s.caches.push_back({p + "key", h, 0, hd, true});
      s.caches.push_back({p + "value", h, 0, hd, true});
      s.caches.push_back({p + "summary_key", h, s.summaries, hd, false});
      s.caches.push_back({p + "summary_value", h, s.summaries, hd, false});
      s.caches.push_back({p + "qmax", h, 1, hd, false});  // running max of the own segment
      s.caches.push_back({p + "kmax", h, 1, hd, false});
    } else {  // the own row's q/k/v and LN input; K~ and R of every position (rows < u read)
      for (const char* what : {"row_query", "row_key", "row_value"})
        s.caches.push_back({p + what, h, seg, hd, false});
      s.caches.push_back({p + "row_input", 1, seg, cfg_.emb_dim, false});
      s.caches.push_back({p + "summary_key", h, 0, hd, true});
      s.caches.push_back({p + "summary_value", h, 0, hd, true});
    }
  }
  return s;
}

namespace {
// [a, b, c, e] -> [a, b, 1, c, e]: the rows layout of combine() for one query.
ValueId five(GraphContext& c, ValueId t) {
  if (!c.ok()) return kNoValue;
  const TensorDesc& td = c.desc(t);
  return reshape(c, t, {td.dim(0), td.dim(1), 1, td.dim(2), td.dim(3)});
}

// One step's query over its direct keys (cached, masked by `direct_keep`) and the summary
// slots (masked by `summary_keep`) in one softmax, as the full graph's combine().
ValueId combine_step(GraphContext& c, ValueId q, ValueId keys, ValueId values, ValueId direct_keep,
                     ValueId summary_keys, ValueId summary_values, ValueId summary_keep,
                     const std::string& a) {
  combiner::SlotGroup direct{
      .key = five(c, keys), .value = five(c, values), .keeps = {five(c, direct_keep)}, .name = "direct"};
  combiner::SlotGroup summary{.key = five(c, summary_keys),
                              .value = five(c, summary_values),
                              .keeps = {five(c, summary_keep)},
                              .name = "summary"};
  return combiner::combine(c, five(c, q), kNoValue, {direct, summary}, a + "combiner");
}
}  // namespace

// Fixed form, one token at position p = u s + t: the keys of segment u up to p (direct) and
// the summaries of segments r < u in ONE softmax, as the full graph. Segment u's running
// qmax / kmax (segment_max over [previous, new]) and E_u = softmax(qmax k_j) v_j over its
// keys so far are written into summary slot u every step; it is final at t = s - 1 and only
// read by later segments.
ValueId Combiner::step_fixed(GraphContext& c, const StepHeads& x, const std::string& cache,
                             const std::string& a) const {
  GraphBuilder& b = c.b;
  auto past = [&](const char* what) { return c.input("past." + cache + what); };
  const ValueId start = c.input("segment_start"), write = c.input("write_slot"),
                keep = c.input("direct_keep");
  auto running_max = [&](ValueId prev, ValueId now, const std::string& name) {
    const ValueId both =
        b.segment_max({b.concat({prev, now}, {.axis = 2}, name + ".both")}, {.axis = 2, .segment = 2}, name);
    return b.where({start, now, both}, {}, name + ".start");
  };
  const ValueId keys = b.where({write, x.k, past("key")}, {}, a + "cache.key");
  const ValueId values = b.where({write, x.v, past("value")}, {}, a + "cache.value");
  const ValueId qmax = running_max(past("qmax"), x.q, a + "qmax");
  const ValueId kmax = running_max(past("kmax"), x.k, a + "kmax");
  const ValueId e = combiner::attend(c, qmax, keys, values, {keep}, a + "local");  // [R,H,1,hd]
  const ValueId sw = c.input("summary_write");
  const ValueId sk = b.where({sw, kmax, past("summary_key")}, {}, a + "cache.summary_key");
  const ValueId se = b.where({sw, e, past("summary_value")}, {}, a + "cache.summary_value");
  for (auto [v2, what] : {std::pair{keys, "key"},
                          {values, "value"},
                          {sk, "summary_key"},
                          {se, "summary_value"},
                          {qmax, "qmax"},
                          {kmax, "kmax"}})
    c.output(v2, "present." + cache + what);
  return combine_step(c, x.q, keys, values, keep, sk, se, c.input("summary_keep"), a);
}

// Axial form, one token at (u, t): direct = the own row's keys up to t; summaries = K~[r, t],
// R[r, t] of the rows r < u, cached per position. Each step recomputes the own row's R (full
// attention inside the row over its keys so far, O(s^2 d)) and K~ = W2 LN'(W1 R + h), and
// writes them into the row's slots (final at t = s - 1).
ValueId Combiner::step_axial(GraphContext& c, const StepHeads& x, const std::string& cache,
                             const std::string& a) const {
  GraphBuilder& b = c.b;
  auto past = [&](const char* what) { return c.input("past." + cache + what); };
  const int64_t d = cfg_.emb_dim, heads = cfg_.num_heads, hd = cfg_.qkv_dim / heads, hh = cfg_.qkv_dim;
  const ValueId write = c.input("row_write"), keep = c.input("row_keep"), slots = c.input("row_slots");
  if (!c.ok()) return kNoValue;
  const int64_t r = c.desc(x.q).dim(0), seg = c.desc(write).dim(2), cap = c.desc(slots).dim(2);
  const ValueId rq = b.where({write, x.q, past("row_query")}, {}, a + "cache.row_query");
  const ValueId rk = b.where({write, x.k, past("row_key")}, {}, a + "cache.row_key");
  const ValueId rv = b.where({write, x.v, past("row_value")}, {}, a + "cache.row_value");
  const ValueId rh =
      b.where({write, reshape(c, x.h, {r, 1, 1, d}), past("row_input")}, {}, a + "cache.row_input");
  const ValueId row = combiner::attend(c, rq, rk, rv, {keep}, a + "row");  // R [R, H, s, hd]
  const ValueId w1 = b.add({dense_general(c, merge_heads(c, row), a + "DenseGeneral_0/kernel", hh, d),
                            reshape(c, rh, {r, seg, d})},
                           {}, a + "W1.residual");
  const ValueId k_sum = split_heads(
      c, dense_general(c, layer_norm(c, w1, a + "LayerNorm_0"), a + "DenseGeneral_1/kernel", d, hh), heads,
      hd);
  auto tiled = [&](ValueId t, const std::string& name) {  // [R, H, s, hd] -> [R, H, S, hd]
    return cap == seg ? t : b.concat(std::vector<ValueId>(size_t(cap / seg), t), {.axis = 2}, name);
  };
  const ValueId sk =
      b.where({slots, tiled(k_sum, a + "tile.key"), past("summary_key")}, {}, a + "cache.summary_key");
  const ValueId sv =
      b.where({slots, tiled(row, a + "tile.value"), past("summary_value")}, {}, a + "cache.summary_value");
  for (auto [v2, what] : {std::pair{rq, "row_query"},
                          {rk, "row_key"},
                          {rv, "row_value"},
                          {rh, "row_input"},
                          {sk, "summary_key"},
                          {sv, "summary_value"}})
    c.output(v2, "present." + cache + what);
  return combine_step(c, x.q, rk, rv, keep, sk, sv, c.input("column_keep"), a);
}

// The step graph (lm/causal_lm.h): embedding + PE at `position`, the layers with the form's
// cached attention, final LN and head.
void Combiner::build_step(GraphContext& c) const {
  GraphBuilder& b = c.b;
  const int64_t d = cfg_.emb_dim, heads = cfg_.num_heads, hd = cfg_.qkv_dim / heads, hh = cfg_.qkv_dim;
  const ValueId ids = c.input("ids"), pos = c.input("position");
  if (!c.ok()) return;
  const int64_t r = c.desc(ids).dim(0);
  ValueId x = b.embedding({c.weight("Embed_0/embedding"), ids}, {}, "Embed_0");
  const ValueId pe =
      combiner::constant_f32(c, "sinusoidal_positions", {cfg_.max_len, d}, sinusoid(cfg_.max_len, d));
  x = b.add({x, b.embedding({pe, pos}, {}, "position")}, {}, "add_positions");
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    const std::string p = layer_prefix(l), a = p + attention_module(cfg_.form.variant) + "/";
    const ValueId h = layer_norm(c, x, p + "LayerNorm_0");
    auto project = [&](const char* what, float alpha) {
      return split_heads(c, dense_general(c, h, a + what + "/kernel", d, hh, alpha), heads,
                         hd);  // [R,H,1,hd]
    };
    const StepHeads sh{.q = project("query", float(1.0 / std::sqrt(double(hd)))),
                       .k = project("key", 1.0f),
                       .v = project("value", 1.0f),
                       .h = h};
    const std::string cache = std::to_string(l) + ".";
    const ValueId y =
        cfg_.form.variant == Variant::fixed ? step_fixed(c, sh, cache, a) : step_axial(c, sh, cache, a);
    const ValueId att = dense_general(c, merge_heads(c, reshape(c, y, {r, heads, 1, hd})),
                                      a + output_module() + "/kernel", hh, d);
    x = b.add({x, att}, {}, p + "residual_0");
    const ValueId hidden =
        dense(c, layer_norm(c, x, p + "LayerNorm_1"), p + "MlpBlock_0/Dense_0", Activation::relu);
    x = b.add({x, dense(c, hidden, p + "MlpBlock_0/Dense_1", Activation::none)}, {}, p + "residual_1");
  }
  c.output(dense(c, layer_norm(c, x, "autoreg_model/LayerNorm_0"), "autoreg_model/Dense_0", Activation::none),
           "logits");
}

void Combiner::build(GraphContext& c) const {
  GraphBuilder& b = c.b;
  const TokenInputs in = token_inputs(c, cfg_.max_len, "max_len of the config");
  if (!c.ok()) return;
  const int64_t n = in.length, s = cfg_.form.variant == Variant::logsparse ? 1 : cfg_.form.segment;
  const int64_t np = (n + s - 1) / s * s;  // <= max_len: max_len % s == 0
  ValueId ids = in.ids;
  if (np != n) ids = b.pad({ids}, {.axis = 1, .after = np - n}, "pad_to_segments.ids");
  ValueId key_mask = kNoValue;
  if (cfg_.form.key_padding) {
    if (in.mask != kNoValue) {
      key_mask = mask_to_u8(c, in.mask);
      if (np != n) key_mask = b.pad({key_mask}, {.axis = 1, .after = np - n}, "pad_to_segments.mask");
    } else {
      key_mask = combiner::keep_mask(c, "pad_to_segments.mask", {in.batch, np},
                                     [n](int64_t, int64_t, int64_t i) { return i < n; });
    }
  }

  ValueId x = b.embedding({c.weight("Embed_0/embedding"), ids}, {}, "Embed_0");
  x = b.add(
      {x, combiner::constant_f32(c, "sinusoidal_positions", {np, cfg_.emb_dim}, sinusoid(np, cfg_.emb_dim))},
      {}, "add_positions");
  auto real = [&](ValueId t) { return np == n ? t : slice(c, t, 1, 0, n); };
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    const std::string p = layer_prefix(l), tag = "debug.layer" + std::to_string(l);
    const ValueId a = attention(c, layer_norm(c, x, p + "LayerNorm_0"), l, key_mask);
    if (l == 0) c.debug(real(a), tag + ".attention");
    x = b.add({x, a}, {}, p + "residual_0");
    const ValueId hidden =
        dense(c, layer_norm(c, x, p + "LayerNorm_1"), p + "MlpBlock_0/Dense_0", Activation::relu);
    x = b.add({x, dense(c, hidden, p + "MlpBlock_0/Dense_1", Activation::none)}, {}, p + "residual_1");
    if (l == 0) c.debug(real(x), tag + ".output");
  }
  const ValueId last = real(layer_norm(c, x, "autoreg_model/LayerNorm_0"));
  c.output(last, "last_hidden_state");
  c.output(dense(c, last, "autoreg_model/Dense_0", Activation::none), "logits");
}

}  // namespace

Result<std::unique_ptr<Architecture>> parse_combiner_config(std::string_view config_json) {
  LR_ASSIGN_OR_RETURN(ConfigReader r, ConfigReader::parse(config_json, "combiner config"));
  constexpr int64_t kMaxDim = int64_t(1) << 20;
  CombinerConfig c;
  LR_ASSIGN_OR_RETURN(c.vocab_size, r.integer("vocab_size", 1, int64_t(1) << 30));
  LR_ASSIGN_OR_RETURN(c.emb_dim, r.integer("emb_dim", 2, kMaxDim));
  if (c.emb_dim % 2 != 0)
    return r.error("emb_dim", "must be even (the sinusoidal table has D/2 sin and D/2 cos columns), found " +
                                  std::to_string(c.emb_dim));
  LR_ASSIGN_OR_RETURN(c.num_heads, r.integer("num_heads", 1, 4096));
  LR_ASSIGN_OR_RETURN(c.qkv_dim, r.integer("qkv_dim", 1, kMaxDim));
  if (c.qkv_dim % c.num_heads != 0)
    return r.error("qkv_dim", "must be a multiple of num_heads " + std::to_string(c.num_heads) + ", found " +
                                  std::to_string(c.qkv_dim));
  LR_ASSIGN_OR_RETURN(c.mlp_dim, r.integer("mlp_dim", 1, kMaxDim));
  LR_ASSIGN_OR_RETURN(c.num_layers, r.integer("num_layers", 0, 1024));
  LR_ASSIGN_OR_RETURN(c.max_len, r.integer("max_len", 1, int64_t(1) << 30));

  LR_ASSIGN_OR_RETURN(c.attention, r.string_or("attention", ""));
  if (c.attention == "fixed")
    c.form.variant = Variant::fixed;
  else if (c.attention == "logsparse")
    c.form.variant = Variant::logsparse;
  else if (c.attention == "axial")
    c.form.variant = Variant::axial;
  else if (c.attention == "mixture")
    c.form.variant = Variant::mixture;
  else
    return r.error("attention",
                   "expected \"fixed\", \"logsparse\", \"axial\" or \"mixture\", found " +
                       (r.has("attention") ? "\"" + c.attention + "\"" : std::string("nothing (missing)")));
  LR_ASSIGN_OR_RETURN(c.form.causal, r.boolean_or("causal", true));
  LR_ASSIGN_OR_RETURN(c.form.key_padding, r.boolean_or("key_padding", false));
  const bool logsparse = c.form.variant == Variant::logsparse;
  if (logsparse && !c.form.causal)
    return r.error("causal",
                   "attention \"logsparse\" exists only in causal form (JAX _SelfAttLogn; the TF code "
                   "has no bidirectional logsparse), found causal = false");
  if (c.form.causal && c.form.key_padding)
    return r.error("key_padding",
                   "applies to bidirectional forms only (causal forms are exact under right "
                   "padding, MODELS.md §2.6), found key_padding = true with causal = true");
  if (logsparse) {
    // log_len = ceil(log2(max_len - 1)) >= 1; JAX fails for max_len = 2 (empty concatenate).
    if (c.max_len < 3)
      return r.error("max_len",
                     "attention \"logsparse\" needs max_len >= 3 (the JAX level count "
                     "ceil(log2(max_len - 1)) is 0 below that), found " +
                         std::to_string(c.max_len));
    c.form.log_len = int64_t(std::ceil(std::log2(double(c.max_len - 1))));
    r.ignore("max_seg_len");  // the JAX config carries it for every form
  } else {
    LR_ASSIGN_OR_RETURN(c.max_seg_len, r.integer("max_seg_len", 1, c.max_len));
    if (c.max_len % c.max_seg_len != 0)
      return r.error("max_seg_len", "max_len " + std::to_string(c.max_len) +
                                        " must be a multiple of it (the " +
                                        "official code reshapes max_len into [max_len / s, s]), found " +
                                        std::to_string(c.max_seg_len));
    c.form.segment = c.max_seg_len;
  }
  LR_ASSIGN_OR_RETURN(const std::string pooling, r.string_or("pooling", "max"));
  if (pooling != "max" && pooling != "sum")
    return r.error("pooling", "expected \"max\" or \"sum\", found \"" + pooling + "\"");
  if (pooling == "sum" && (c.form.variant != Variant::mixture || c.form.causal))
    return r.error("pooling",
                   "\"sum\" (the TF cumsum summaries) exists for the bidirectional mixture only, found "
                   "it with attention \"" +
                       c.attention + "\", causal = " + (c.form.causal ? "true" : "false"));
  c.form.pooling = pooling == "sum" ? Pooling::sum : Pooling::max;
  for (const char* k : {"dropout_rate", "attention_dropout_rate"}) r.ignore(k);
  LR_RETURN_IF_ERROR(r.finish());
  return std::unique_ptr<Architecture>(new Combiner(std::move(c)));
}

}  // namespace longrun::models
