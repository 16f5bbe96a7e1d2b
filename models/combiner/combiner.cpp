// combiner: the JAX LanguageModel around the Combiner attention forms (docs/models.md#combiner-lm):
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

#include "combiner/combiner_model.h"
#include "common/config.h"

namespace longrun::models {

using combiner::Pooling;
using combiner::RowSummaryMode;
using combiner::Variant;

const char* combiner_attention_module(Variant v) {
  switch (v) {
    case Variant::fixed: return "_SelfAttSqrtn_0";
    case Variant::logsparse: return "_SelfAttLogn_0";
    case Variant::axial: return "_SelfAttAxialRowmajor_0";
    default: return "_AxialMixtureAtt_0";
  }
}

std::string combiner_layer_prefix(int64_t l) {
  return "autoreg_model/transformer_layer_" + std::to_string(l) + "/";
}

// Flax WMT sinusoidal table, concatenated halves: column j < D/2 is sin(p e^{-j ln(1e4)/(D/2-1)}),
// column D/2 + j the cos of the same angle. Computed in double, rounded once.
std::vector<float> combiner_sinusoid(int64_t rows, int64_t d) {
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

std::vector<ParamSpec> Combiner::parameters() const {
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
    const std::string p = combiner_layer_prefix(l),
                      a = p + combiner_attention_module(cfg_.form.variant) + "/";
    layer_norm(p + "LayerNorm_0");
    for (const char* k : {"query", "key", "value"}) t.push_back({a + k + "/kernel", {d, h, hd}, false});
    if (axial_projections()) {
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

std::vector<ModelInput> Combiner::inputs() const {
  std::vector<ModelInput> in = {{"input_ids",
                                 true,
                                 {DType::i32, DType::i64},
                                 "[B, N] token ids, N <= " + std::to_string(cfg_.max_len)}};
  if (cfg_.form.key_padding)
    in.push_back(attention_mask_input("[B, N] 1 = token, 0 = padding (default: all ones)"));
  return in;
}

std::vector<std::string> Combiner::debug_outputs() const {
  // The first layer only: enough to point a mismatch at the attention form, the summaries or
  // the rest of the layer, without doubling the size of every golden.
  if (cfg_.num_layers == 0) return {};
  std::vector<std::string> out;  // in the order the builder produces them
  if (cfg_.form.variant != Variant::logsparse) out.push_back("debug.layer0.summary_keys");
  out.push_back("debug.layer0.attention");
  out.push_back("debug.layer0.output");
  return out;
}

std::string Combiner::config_json() const {
  nlohmann::json j = {{"vocab_size", cfg_.vocab_size}, {"emb_dim", cfg_.emb_dim},
                      {"num_heads", cfg_.num_heads},   {"qkv_dim", cfg_.qkv_dim},
                      {"mlp_dim", cfg_.mlp_dim},       {"num_layers", cfg_.num_layers},
                      {"max_len", cfg_.max_len},       {"attention", cfg_.attention},
                      {"causal", cfg_.form.causal},    {"key_padding", cfg_.form.key_padding}};
  if (cfg_.form.variant != Variant::logsparse) j["max_seg_len"] = cfg_.max_seg_len;
  if (cfg_.form.variant == Variant::mixture && !cfg_.form.causal)
    j["pooling"] = cfg_.form.pooling == Pooling::sum ? "sum" : "max";
  if (cfg_.form.variant == Variant::axial)
    j["row_summary"] = combiner::row_summary_name(cfg_.form.row_summary);
  return j.dump();
}

ValueId Combiner::attention(GraphContext& c, ValueId h, int64_t l, ValueId key_mask) const {
  const std::string a = combiner_layer_prefix(l) + combiner_attention_module(cfg_.form.variant) + "/";
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
    // The residual as its own add: the GEMM's beta*C epilogue reads C tile by tile, which
    // was slower for this DRAM-resident [N, D] (3 ms against 1.8 ms at N = 8192).
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

void Combiner::build(GraphContext& c) const {
  GraphBuilder& b = c.b;
  const InputLengthLimit limit = *max_input_length();
  const TokenInputs in = token_inputs(c, limit.tokens, limit.source);
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
  x = b.add({x, combiner::constant_f32(c, "sinusoidal_positions", {np, cfg_.emb_dim},
                                       combiner_sinusoid(np, cfg_.emb_dim))},
            {}, "add_positions");
  auto real = [&](ValueId t) { return np == n ? t : slice(c, t, 1, 0, n); };
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    const std::string p = combiner_layer_prefix(l), tag = "debug.layer" + std::to_string(l);
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
                   "padding, docs/models.md#combiner-padding), found key_padding = true with causal = true");
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
  LR_ASSIGN_OR_RETURN(const std::string row_summary, r.string_or("row_summary", "proj"));
  const std::optional<RowSummaryMode> mode = combiner::parse_row_summary(row_summary);
  if (!mode)
    return r.error("row_summary", "expected \"proj\", \"none\" or \"wsum\", found \"" + row_summary + "\"");
  if (*mode != RowSummaryMode::proj && c.form.variant != Variant::axial)
    return r.error("row_summary", "applies to attention \"axial\" only, found \"" + row_summary +
                                      "\" with attention \"" + c.attention + "\"");
  c.form.row_summary = *mode;
  for (const char* k : {"dropout_rate", "attention_dropout_rate"}) r.ignore(k);
  LR_RETURN_IF_ERROR(r.finish());
  return std::unique_ptr<Architecture>(new Combiner(std::move(c)));
}

}  // namespace longrun::models
