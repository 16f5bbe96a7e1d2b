// combiner: the cached one-token step graphs of the causal forms (lm/causal_lm.h). Each
// form keeps what later positions read -- keys and values, running maxima, finished
// summaries -- in caches fed back every step, and runs the query of the new position over
// its direct keys and summary slots in ONE softmax, as the full graph (combiner.cpp).
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "combiner/combiner_model.h"

namespace longrun::models {

using combiner::Variant;

DType StepCaches::dtype(const std::string& name) const {
  const ValueId v = stored(name);
  return c_.ok() ? c_.desc(v).dtype() : DType::f32;
}

ValueId StepCaches::to_f32(ValueId v, const std::string& node) const {
  return c_.b.cast({v}, {.to = DType::f32}, node);
}

ValueId StepCaches::past(const std::string& name) {
  const ValueId v = stored(name);
  if (dtype(name) == DType::f32) return v;
  auto [it, fresh] = past_f32_.try_emplace(name, kNoValue);
  if (fresh) it->second = to_f32(v, prefix_ + "past." + name + ".to_f32");
  return it->second;
}

ValueId StepCaches::to_cache(ValueId v, const std::string& name, const std::string& node) const {
  const DType t = dtype(name);
  return t == DType::f32 ? v : c_.b.cast({v}, {.to = t}, node + ".to_cache");
}

ValueId StepCaches::keep(ValueId v, const std::string& name, const std::string& node) {
  next_[name] = v;
  return dtype(name) == DType::f32 ? v : to_f32(v, node + ".to_f32");
}

ValueId StepCaches::update(ValueId now, const std::string& name, ValueId at) {
  const std::string node = prefix_ + "cache." + name;
  return keep(c_.b.where({at, to_cache(now, name, node), stored(name)}, {}, node), name, node);
}

ValueId StepCaches::set(ValueId value, const std::string& name) {
  const std::string node = prefix_ + "cache." + name;
  return keep(to_cache(value, name, node), name, node);
}

void StepCaches::emit(const LmStepSpec& spec) {
  for (const LmStepSpec::Cache& cache : spec.caches) {
    if (cache.name.compare(0, layer_.size(), layer_) != 0) continue;
    const auto it = next_.find(cache.name.substr(layer_.size()));
    if (it == next_.end()) {
      c_.fail(internal_error("combiner step: cache '" + cache.name + "' was not updated"));
      return;
    }
    c_.output(it->second, "present." + cache.name);
  }
}

LmStepSpec Combiner::step_spec() const {
  LmStepSpec s;
  s.vocab = cfg_.vocab_size, s.max_len = cfg_.max_len;
  const Variant v = cfg_.form.variant;
  const int64_t h = cfg_.num_heads, hd = cfg_.qkv_dim / h;
  if (v == Variant::logsparse) {
    s.summaries = cfg_.form.log_len;  // one summary slot per level
    s.inputs = {"ids", "position", "write_slot", "level_start", "level_end", "level_keep", "level_use"};
    for (int64_t l = 0; l < cfg_.num_layers; ++l) {
      const std::string p = std::to_string(l) + ".";
      s.caches.push_back({p + "key", h, 0, hd, true});
      s.caches.push_back({p + "value", h, 0, hd, true});
      // Per level: running max of q and k over the current block, and the key (max-pooled)
      // and value (local expectation) of the last finished block.
      for (const char* what : {"level_qmax", "level_kmax", "level_key", "level_value"})
        s.caches.push_back({p + what, h, s.summaries, hd, false});
    }
    return s;
  }
  s.segment = cfg_.form.segment, s.summaries = cfg_.max_len / cfg_.form.segment;
  const int64_t seg = s.segment;
  if (v == Variant::fixed)
    s.inputs = {"ids",          "position",      "write_slot",   "direct_keep",
                "summary_keep", "summary_write", "segment_start"};
  else if (v == Variant::axial)
    s.inputs = {"ids", "position", "row_write", "row_keep", "row_slots", "column_keep"};
  else
    s.inputs = {"ids",           "position",      "write_slot",    "direct_keep", "column_keep",
                "segment_start", "first_row",     "row_write",     "row_slots",   "column_rows_keep",
                "prev_row_keep", "top_left_keep", "top_right_keep"};
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    const std::string p = std::to_string(l) + ".";
    if (v == Variant::fixed) {
      s.caches.push_back({p + "key", h, 0, hd, true});
      s.caches.push_back({p + "value", h, 0, hd, true});
      s.caches.push_back({p + "summary_key", h, s.summaries, hd, false});
      s.caches.push_back({p + "summary_value", h, s.summaries, hd, false});
      s.caches.push_back({p + "qmax", h, 1, hd, false});  // running max of the own segment
      s.caches.push_back({p + "kmax", h, 1, hd, false});
    } else if (v == Variant::mixture) {
      s.caches.push_back({p + "key", h, 0, hd, true});
      s.caches.push_back({p + "value", h, 0, hd, true});
      for (const char* what : {"row_query", "row_key", "row_value",  // the own row
                               "column_qmax", "column_kmax",         // per column, rows so far
                               "above_qmax", "above_kmax"})          // per column, rows < u
        s.caches.push_back({p + what, h, seg, hd, false});
      // Per position (r, t): row r's top-left / top-right summary key and value at column t.
      for (const char* what : {"top_left_key", "top_left_value", "top_right_key", "top_right_value"})
        s.caches.push_back({p + what, h, 0, hd, true});
    } else {  // the own row's q/k/v and LN input; K~ and R of every position (rows < u read)
      for (const char* what : {"row_query", "row_key", "row_value"})
        s.caches.push_back({p + what, h, seg, hd, false});
      if (axial_projections()) s.caches.push_back({p + "row_input", 1, seg, cfg_.emb_dim, false});
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

// A slot group of one query (rows layout), masked by the step input `keep` (none: "").
combiner::SlotGroup step_group(GraphContext& c, ValueId key, ValueId value, const std::string& keep,
                               const char* name) {
  combiner::SlotGroup g{.key = five(c, key), .value = five(c, value), .name = name};
  if (!keep.empty()) g.keeps = {five(c, c.input(keep))};
  return g;
}

// One step's query over its slot groups in one softmax, as the full graph's combine().
ValueId combine_step(GraphContext& c, ValueId q, const std::vector<combiner::SlotGroup>& groups,
                     const std::string& a) {
  return combiner::combine(c, five(c, q), kNoValue, groups, a + "combiner");
}

// The elementwise max of two [R, H, M, hd] tensors: segment_max over the pair stacked on a
// new axis (the op set has no binary max).
ValueId max_of(GraphContext& c, ValueId x, ValueId y, const std::string& name) {
  if (!c.ok()) return kNoValue;
  const TensorDesc d = c.desc(x);
  auto stacked = [&](ValueId t) { return reshape(c, t, {d.dim(0), d.dim(1), d.dim(2), 1, d.dim(3)}); };
  const ValueId both = c.b.concat({stacked(x), stacked(y)}, {.axis = 3}, name + ".both");
  return reshape(c, c.b.segment_max({both}, {.axis = 3, .segment = 2}, name),
                 {d.dim(0), d.dim(1), d.dim(2), d.dim(3)});
}

// Running maxima [R, H, M, hd] of cache `name` with this step's [R, H, 1, hd] vector in every
// slot; slots where `restart` is set start again from the vector.
ValueId running_max(GraphContext& c, StepCaches& caches, const std::string& name, ValueId now,
                    ValueId restart, const std::string& a) {
  const ValueId prev = caches.past(name);
  if (!c.ok()) return kNoValue;
  const int64_t m = c.desc(prev).dim(2);
  const ValueId tiled =
      m == 1 ? now : c.b.upsample_nearest({now}, {.axis = 2, .size = m}, a + name + ".tile");
  return c.b.where({restart, tiled, max_of(c, prev, tiled, a + name)}, {}, a + name + ".restart");
}

// [R, H, s, hd] -> [R, H, S, hd]: a row's values repeated over the cache capacity S, to be
// written into the row's slots.
ValueId tiled_rows(GraphContext& c, ValueId t, int64_t seg, int64_t cap, const std::string& name) {
  return cap == seg ? t : c.b.concat(std::vector<ValueId>(size_t(cap / seg), t), {.axis = 2}, name);
}
}  // namespace

// Fixed form, one token at position p = u s + t: the keys of segment u up to p (direct) and
// the summaries of segments r < u in ONE softmax, as the full graph. Segment u's running
// qmax / kmax and E_u = softmax(qmax k_j) v_j over its keys so far are written into summary
// slot u every step; it is final at t = s - 1 and only read by later segments.
ValueId Combiner::step_fixed(GraphContext& c, const StepHeads& x, StepCaches& caches,
                             const std::string& a) const {
  const ValueId start = c.input("segment_start"), write = c.input("write_slot");
  const ValueId keys = caches.update(x.k, "key", write), values = caches.update(x.v, "value", write);
  const ValueId qmax = caches.set(running_max(c, caches, "qmax", x.q, start, a), "qmax");
  const ValueId kmax = caches.set(running_max(c, caches, "kmax", x.k, start, a), "kmax");
  const ValueId e =
      combiner::attend(c, qmax, keys, values, {c.input("direct_keep")}, a + "local");  // [R,H,1,hd]
  const ValueId sw = c.input("summary_write");
  const ValueId sk = caches.update(kmax, "summary_key", sw), se = caches.update(e, "summary_value", sw);
  return combine_step(c, x.q,
                      {step_group(c, keys, values, "direct_keep", "direct"),
                       step_group(c, sk, se, "summary_keep", "summary")},
                      a);
}

// Logsparse form, one token at position p: slots are p itself and, for every level l with
// bit l of p set, block (p >> l) - 1 of size 2^l (key: max-pooled k, value: its local
// expectation with the max-pooled q). That block is the last one finished at level l, so
// one summary per level is cached: each step updates the running q/k maxima of the current
// block of every level ("level_start" restarts them), computes the current block's local
// expectation over the cached keys ("level_keep"), and when p ends a block ("level_end")
// stores it as the level's summary. The softmax reads the summaries from before this step.
ValueId Combiner::step_logsparse(GraphContext& c, const StepHeads& x, StepCaches& caches,
                                 const std::string& a) const {
  const ValueId write = c.input("write_slot"), start = c.input("level_start"), end = c.input("level_end");
  const ValueId keys = caches.update(x.k, "key", write), values = caches.update(x.v, "value", write);
  const ValueId qmax = caches.set(running_max(c, caches, "level_qmax", x.q, start, a), "level_qmax");
  const ValueId kmax = caches.set(running_max(c, caches, "level_kmax", x.k, start, a), "level_kmax");
  const ValueId e = combiner::attend(c, qmax, keys, values, {c.input("level_keep")}, a + "local");
  caches.update(kmax, "level_key", end);
  caches.update(e, "level_value", end);
  return combine_step(
      c, x.q,
      {step_group(c, x.k, x.v, "", "direct"),
       step_group(c, caches.past("level_key"), caches.past("level_value"), "level_use", "summary")},
      a);
}

// Axial form, one token at (u, t): direct = the own row's keys up to t; summaries = K~[r, t],
// R[r, t] of the rows r < u, cached per position. Each step recomputes the own row's R (full
// attention inside the row over its keys so far, O(s^2 d)) and K~ (row_summary 'proj':
// W2 LN'(W1 R + h); 'none': k; 'wsum': the row attention over the keys), and writes them
// into the row's slots (final at t = s - 1).
ValueId Combiner::step_axial(GraphContext& c, const StepHeads& x, StepCaches& caches,
                             const std::string& a) const {
  const int64_t d = cfg_.emb_dim, heads = cfg_.num_heads, hd = cfg_.qkv_dim / heads, hh = cfg_.qkv_dim;
  const ValueId write = c.input("row_write"), keep = c.input("row_keep"), slots = c.input("row_slots");
  if (!c.ok()) return kNoValue;
  const int64_t r = c.desc(x.q).dim(0), seg = c.desc(write).dim(2), cap = c.desc(slots).dim(2);
  const ValueId rq = caches.update(x.q, "row_query", write), rk = caches.update(x.k, "row_key", write),
                rv = caches.update(x.v, "row_value", write);
  const ValueId row = combiner::attend(c, rq, rk, rv, {keep}, a + "row");  // R [R, H, s, hd]
  ValueId k_sum = rk;                                                      // row_summary 'none'
  if (cfg_.form.row_summary == combiner::RowSummaryMode::wsum) {
    k_sum = combiner::attend(c, rq, rk, rk, {keep}, a + "row_wsum");
  } else if (axial_projections()) {
    const ValueId rh = caches.update(reshape(c, x.h, {r, 1, 1, d}), "row_input", write);
    const ValueId w1 = c.b.add({dense_general(c, merge_heads(c, row), a + "DenseGeneral_0/kernel", hh, d),
                                reshape(c, rh, {r, seg, d})},
                               {}, a + "W1.residual");
    k_sum = split_heads(
        c, dense_general(c, layer_norm(c, w1, a + "LayerNorm_0"), a + "DenseGeneral_1/kernel", d, hh), heads,
        hd);
  }
  const ValueId sk = caches.update(tiled_rows(c, k_sum, seg, cap, a + "tile.key"), "summary_key", slots);
  const ValueId sv = caches.update(tiled_rows(c, row, seg, cap, a + "tile.value"), "summary_value", slots);
  return combine_step(
      c, x.q, {step_group(c, rk, rv, "row_keep", "direct"), step_group(c, sk, sv, "column_keep", "summary")},
      a);
}

// Mixture form (JAX _AxialMixtureAtt), one token at (u, t), the five slot groups of the full
// graph in one softmax: column t's keys of rows < u and row u's keys up to t (cached K/V);
// the column summaries of rows < u for every column c != t (key max_{r<u} k[r, c], value their
// local expectation with query max_{r<u} q[r, c], over the cached keys of that column); and
// the top-left / top-right summaries of every row r < u at column t, cached per position. The
// per-column maxima of rows < u are taken at each row start from the running maxima; the own
// row's top-left / top-right summaries are recomputed from the row caches every step, O(s^2 d),
// and written to the row's slots (final at t = s - 1, read only by later rows).
ValueId Combiner::step_mixture(GraphContext& c, const StepHeads& x, StepCaches& caches,
                               const std::string& a) const {
  const ValueId write = c.input("write_slot"), row_write = c.input("row_write"), slots = c.input("row_slots"),
                start = c.input("segment_start"), first = c.input("first_row");
  if (!c.ok()) return kNoValue;
  const int64_t seg = c.desc(row_write).dim(2), cap = c.desc(slots).dim(2);
  const ValueId keys = caches.update(x.k, "key", write), values = caches.update(x.v, "value", write);
  const ValueId rq = caches.update(x.q, "row_query", row_write),
                rk = caches.update(x.k, "row_key", row_write),
                rv = caches.update(x.v, "row_value", row_write);
  // Running per-column maxima over the rows so far (row 0 starts them), and their value at
  // the start of this row: the maxima of rows < u.
  for (const char* what : {"column_qmax", "column_kmax"})
    caches.update(running_max(c, caches, what, what == std::string("column_qmax") ? x.q : x.k, first, a),
                  what, row_write);
  const ValueId qabove = caches.update(caches.past("column_qmax"), "above_qmax", start);
  const ValueId kabove = caches.update(caches.past("column_kmax"), "above_kmax", start);
  const ValueId e_col =
      combiner::attend(c, qabove, keys, values, {c.input("column_rows_keep")}, a + "prev_row.local");
  // The own row's top-left (columns < t') and top-right (columns > t') summaries, written to
  // the row's slots.
  for (const bool reverse : {false, true}) {
    const std::string side = reverse ? "top_right" : "top_left", p = a + side;
    const ValueId kp = combiner::exclusive_pool(c, rk, 2, reverse, combiner::Pooling::max, p + ".k");
    const ValueId qp = combiner::exclusive_pool(c, rq, 2, reverse, combiner::Pooling::max, p + ".q");
    const ValueId inner = combiner::keep_mask(
        c, p + ".inner", {seg, seg},
        [reverse](int64_t, int64_t t, int64_t col) { return reverse ? col > t : col < t; });
    const ValueId e = combiner::attend(c, qp, rk, rv, {inner}, p + ".local");
    caches.update(tiled_rows(c, kp, seg, cap, p + ".tile.key"), side + "_key", slots);
    caches.update(tiled_rows(c, e, seg, cap, p + ".tile.value"), side + "_value", slots);
  }
  // The summaries of rows < u are final in the caches before and after this step's writes.
  return combine_step(
      c, x.q,
      {step_group(c, keys, values, "column_keep", "col"), step_group(c, keys, values, "direct_keep", "row"),
       step_group(c, kabove, e_col, "prev_row_keep", "prev_row"),
       step_group(c, caches.past("top_left_key"), caches.past("top_left_value"), "top_left_keep", "top_left"),
       step_group(c, caches.past("top_right_key"), caches.past("top_right_value"), "top_right_keep",
                  "top_right")},
      a);
}

// The step graph (lm/causal_lm.h): embedding + PE at `position`, the layers with the form's
// cached attention, final LN and head.
void Combiner::build_step(GraphContext& c) const {
  GraphBuilder& b = c.b;
  const int64_t d = cfg_.emb_dim, heads = cfg_.num_heads, hd = cfg_.qkv_dim / heads, hh = cfg_.qkv_dim;
  const LmStepSpec spec = step_spec();
  const ValueId ids = c.input("ids"), pos = c.input("position");
  if (!c.ok()) return;
  const int64_t r = c.desc(ids).dim(0);
  ValueId x = b.embedding({c.weight("Embed_0/embedding"), ids}, {}, "Embed_0");
  const ValueId pe = combiner::constant_f32(c, "sinusoidal_positions", {cfg_.max_len, d},
                                            combiner_sinusoid(cfg_.max_len, d));
  x = b.add({x, b.embedding({pe, pos}, {}, "position")}, {}, "add_positions");
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    const std::string p = combiner_layer_prefix(l),
                      a = p + combiner_attention_module(cfg_.form.variant) + "/";
    const ValueId h = layer_norm(c, x, p + "LayerNorm_0");
    auto project = [&](const char* what, float alpha) {
      return split_heads(c, dense_general(c, h, a + what + "/kernel", d, hh, alpha), heads,
                         hd);  // [R,H,1,hd]
    };
    const StepHeads sh{.q = project("query", float(1.0 / std::sqrt(double(hd)))),
                       .k = project("key", 1.0f),
                       .v = project("value", 1.0f),
                       .h = h};
    StepCaches caches(c, std::to_string(l) + ".", a);
    ValueId y = kNoValue;
    switch (cfg_.form.variant) {
      case Variant::fixed: y = step_fixed(c, sh, caches, a); break;
      case Variant::logsparse: y = step_logsparse(c, sh, caches, a); break;
      case Variant::axial: y = step_axial(c, sh, caches, a); break;
      case Variant::mixture: y = step_mixture(c, sh, caches, a); break;
    }
    caches.emit(spec);
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

}  // namespace longrun::models
