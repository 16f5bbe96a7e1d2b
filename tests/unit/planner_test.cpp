// Memory planner: aliasing rules (in-place, views), packing safety and the live-bytes lower
// bound, checked against an independent brute-force oracle on hand-made and random graphs.
#include "longrun/planner.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "longrun/graph.h"
#include "longrun/ops/schema.h"

namespace longrun {
namespace {

TensorDesc f32(std::initializer_list<int64_t> dims) { return TensorDesc(DType::f32, dims); }

ReshapeAttrs reshape_to(std::initializer_list<int64_t> dims) {
  ReshapeAttrs a;
  a.rank = int(dims.size());
  std::copy(dims.begin(), dims.end(), a.dims.begin());
  return a;
}

Graph build(GraphBuilder& b) {
  Result<Graph> g = b.build();
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  return std::move(g).value();
}

Plan plan(const Graph& g, const PlannerOptions& o = {}) {
  Result<Plan> p = plan_memory(g, o);
  REQUIRE_MESSAGE(p.ok(), p.status().to_string());
  return std::move(p).value();
}

bool external(const Graph& g, ValueId v) {
  return g.value(v).role != ValueRole::intermediate || g.value(v).is_output;
}

// The oracle: lifetimes recomputed from the graph alone (raw first definition and last
// read of every value), then merged over the alias sets the plan chose.
struct Oracle {
  std::vector<int> first, last;            // raw, per value
  std::vector<int> root_first, root_last;  // per storage root, over all its aliases
};

Oracle lifetimes(const Graph& g, const Plan& p) {
  const size_t nv = g.values().size();
  const int nn = int(g.nodes().size());
  Oracle o;
  o.first.assign(nv, -1);
  for (int i = 0; i < nn; ++i) {
    for (ValueId v : g.nodes()[size_t(i)].outputs) o.first[size_t(v)] = i;
  }
  o.last = o.first;
  for (int i = 0; i < nn; ++i) {
    for (ValueId v : g.nodes()[size_t(i)].inputs) o.last[size_t(v)] = std::max(o.last[size_t(v)], i);
  }
  for (size_t v = 0; v < nv; ++v) {
    if (g.values()[v].is_output) o.last[v] = nn;
  }
  o.root_first = o.first;
  o.root_last = o.last;
  for (size_t v = 0; v < nv; ++v) {
    const size_t r = size_t(p.storage[v]);
    o.root_first[r] = std::min(o.root_first[r], o.first[v]);
    o.root_last[r] = std::max(o.root_last[r], o.last[v]);
  }
  return o;
}

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Every property a plan must have, checked from scratch. Returns the brute-force peak.
int64_t check_plan(const Graph& g, const Plan& p, const PlannerOptions& opt = {}) {
  const size_t nv = g.values().size();
  const int nn = int(g.nodes().size());
  REQUIRE(p.storage.size() == nv);
  REQUIRE(p.offset.size() == nv);
  REQUIRE(p.bytes.size() == nv);
  REQUIRE(p.first_def.size() == nv);
  REQUIRE(p.last_use.size() == nv);
  REQUIRE(p.skip_node.size() == size_t(nn));
  const Oracle o = lifetimes(g, p);

  std::vector<ValueId> roots;
  int inplace = 0, views = 0;
  for (size_t v = 0; v < nv; ++v) {
    const ValueId r = p.storage[v];
    REQUIRE(r >= 0);
    REQUIRE(size_t(r) < nv);
    CHECK(p.storage[size_t(r)] == r);  // storage points at a root, never at another alias
    CHECK(p.bytes[v] == g.values()[v].desc.nbytes());
    CHECK(p.first_def[v] == o.first[v]);
    CHECK(p.offset[v] == p.offset[size_t(r)]);
    if (r == ValueId(v)) {
      CHECK(p.last_use[v] == o.root_last[v]);
      if (external(g, r)) {
        CHECK(p.offset[v] == -1);
      } else {
        CHECK(p.offset[v] >= 0);
        CHECK(p.offset[v] % opt.alignment == 0);
        CHECK(p.offset[v] + p.bytes[v] <= p.report.arena_bytes);
        roots.push_back(ValueId(v));
      }
      continue;
    }
    // An alias: the output of a view node or of an in-place node.
    CHECK_FALSE(external(g, ValueId(v)));  // inputs, weights and outputs are never aliases
    const int node = o.first[v];
    REQUIRE(node >= 0);
    const Node& n = g.nodes()[size_t(node)];
    const OpSchema& s = op_schema(n.kind);
    if (p.skip_node[size_t(node)]) {
      CHECK(s.is_view);
      CHECK(opt.allow_views);
      CHECK(p.storage[size_t(n.inputs[0])] == r);
      ++views;
    } else {
      REQUIRE(s.inplace_input >= 0);
      CHECK(opt.allow_inplace);
      const ValueId in = n.inputs[size_t(s.inplace_input)];
      CHECK(p.storage[size_t(in)] == r);
      CHECK_FALSE(external(g, r));
      CHECK(p.bytes[size_t(in)] == p.bytes[v]);
      // Every earlier alias of the buffer is dead after this node.
      for (size_t w = 0; w < nv; ++w) {
        if (p.storage[w] == r && w != v && o.first[w] < node) CHECK(o.last[w] <= node);
      }
      ++inplace;
    }
  }
  for (int i = 0; i < nn; ++i) {
    if (p.skip_node[size_t(i)])
      CHECK(p.storage[size_t(g.nodes()[size_t(i)].outputs[0])] != g.nodes()[size_t(i)].outputs[0]);
  }
  CHECK(p.report.num_values == int(roots.size()));
  CHECK(p.report.num_inplace == inplace);
  CHECK(p.report.num_views == views);

  // No two buffers with overlapping lifetimes share a byte.
  for (size_t i = 0; i < roots.size(); ++i) {
    for (size_t j = i + 1; j < roots.size(); ++j) {
      const size_t a = size_t(roots[i]), b = size_t(roots[j]);
      const bool live_together = o.root_first[a] <= o.root_last[b] && o.root_first[b] <= o.root_last[a];
      const bool share = p.bytes[a] > 0 && p.bytes[b] > 0 && p.offset[a] < p.offset[b] + p.bytes[b] &&
                         p.offset[b] < p.offset[a] + p.bytes[a];
      CHECK_MESSAGE(!(live_together && share), "values ", a, " and ", b, " overlap");
    }
  }

  // Brute-force lower bound.
  int64_t peak = 0;
  for (int s = 0; s < nn; ++s) {
    int64_t live = 0;
    for (ValueId r : roots) {
      if (o.root_first[size_t(r)] <= s && s <= o.root_last[size_t(r)])
        live += align_up(p.bytes[size_t(r)], opt.alignment);
    }
    peak = std::max(peak, live);
  }
  CHECK(p.report.peak_live_bytes == peak);
  CHECK(p.report.arena_bytes >= peak);
  return peak;
}

TEST_CASE("planner: relu chain runs in place, but not into inputs or outputs") {
  GraphBuilder b;
  const ValueId x = b.input("x", f32({4, 8}));
  const ValueId r1 = b.relu({x});
  const ValueId r2 = b.relu({r1});
  const ValueId r3 = b.relu({r2});
  b.output(r3, "y");
  const Graph g = build(b);
  const Plan p = plan(g);
  check_plan(g, p);
  CHECK(p.storage[size_t(r1)] == r1);  // x is a graph input: never overwritten
  CHECK(p.storage[size_t(r2)] == r1);  // r1 dies at r2's node
  CHECK(p.offset[size_t(r2)] == p.offset[size_t(r1)]);
  CHECK(p.storage[size_t(r3)] == r3);  // graph outputs live in caller memory
  CHECK(p.offset[size_t(r3)] == -1);
  CHECK(p.offset[size_t(x)] == -1);
  CHECK(p.report.num_inplace == 1);
  CHECK(p.report.num_values == 1);
  CHECK(p.report.arena_bytes == 128);
  CHECK(p.report.input_bytes == 128);
  CHECK(p.report.output_bytes == 128);
  CHECK(p.last_use[size_t(r1)] == 2);

  PlannerOptions no_inplace;
  no_inplace.allow_inplace = false;
  const Plan q = plan(g, no_inplace);
  check_plan(g, q, no_inplace);
  CHECK(q.storage[size_t(r2)] == r2);
  CHECK(q.report.num_inplace == 0);
  CHECK(q.report.arena_bytes == 256);
}

TEST_CASE("planner: no in-place when the input is read later or sizes differ") {
  GraphBuilder b;
  const ValueId x = b.input("x", f32({4, 4}));
  const ValueId r1 = b.relu({x});
  const ValueId r2 = b.relu({r1});    // r1 read again below: not in place
  const ValueId s = b.add({r1, r2});  // r1 and r2 die here: in place into r1
  const ValueId t = b.relu({s});      // s dies here: in place (same buffer as r1)
  const ValueId u = b.input("u", f32({1, 4}));
  const ValueId ru = b.relu({u});      // [1,4]
  const ValueId big = b.add({ru, t});  // broadcast [4,4]: bigger than ru, not in place
  b.output(b.relu({big}), "y");
  const Graph g = build(b);
  const Plan p = plan(g);
  check_plan(g, p);
  CHECK(p.storage[size_t(r2)] == r2);
  CHECK(p.storage[size_t(s)] == r1);
  CHECK(p.storage[size_t(t)] == r1);
  CHECK(p.storage[size_t(big)] == big);
  CHECK(p.report.num_inplace == 2);
}

TEST_CASE("planner: in-place needs the buffer read through one input only") {
  GraphBuilder b;
  const ValueId x = b.input("x", f32({8}));
  const ValueId r = b.relu({x});
  const ValueId s = b.add({r, r});  // both operands are the same buffer
  b.output(b.relu({s}), "y");
  const Graph g = build(b);
  const Plan p = plan(g);
  check_plan(g, p);
  CHECK(p.storage[size_t(s)] == s);
}

TEST_CASE("planner: reshape is a view unless it is a graph output") {
  GraphBuilder b;
  const ValueId x = b.input("x", f32({4, 6}));
  const ValueId r1 = b.relu({x});
  const ValueId v = b.reshape({r1}, reshape_to({6, 4}));
  const ValueId r2 = b.relu({v});  // v and r1 die here: in place through the view
  const ValueId r3 = b.relu({r2});
  const ValueId w = b.reshape({r3}, reshape_to({24}));  // graph output: the kernel copies
  b.output(w, "flat");
  const ValueId vx = b.reshape({x}, reshape_to({24}));  // view of a graph input
  b.output(b.relu({vx}), "y");
  const Graph g = build(b);
  const Plan p = plan(g);
  check_plan(g, p);
  CHECK(p.skip_node[1]);
  CHECK(p.storage[size_t(v)] == r1);
  CHECK(p.offset[size_t(v)] == p.offset[size_t(r1)]);
  CHECK(p.storage[size_t(r2)] == r1);
  CHECK(p.storage[size_t(r3)] == r1);
  CHECK_FALSE(p.skip_node[4]);
  CHECK(p.storage[size_t(w)] == w);
  CHECK(p.offset[size_t(w)] == -1);
  CHECK(p.skip_node[5]);
  CHECK(p.storage[size_t(vx)] == x);
  CHECK(p.offset[size_t(vx)] == -1);
  CHECK(p.report.num_views == 2);
  CHECK(p.report.num_values == 1);

  PlannerOptions no_views;
  no_views.allow_views = false;
  const Plan q = plan(g, no_views);
  check_plan(g, q, no_views);
  CHECK(std::none_of(q.skip_node.begin(), q.skip_node.end(), [](bool s) { return s; }));
  CHECK(q.report.num_views == 0);
}

TEST_CASE("planner: a view keeps its root alive for its own readers") {
  GraphBuilder b;
  const ValueId x = b.input("x", f32({2, 8}));
  const ValueId r1 = b.relu({x});
  const ValueId v = b.reshape({r1}, reshape_to({16}));
  const ValueId r2 = b.relu({r1});  // r1 is read later through v: not in place
  const ValueId r3 = b.relu({r2});
  const ValueId r4 = b.scale({v});  // last read of r1's buffer
  b.output(r3, "a");
  b.output(r4, "b");
  const Graph g = build(b);
  const Plan p = plan(g);
  check_plan(g, p);
  CHECK(p.storage[size_t(v)] == r1);
  CHECK(p.last_use[size_t(r1)] == 4);
  CHECK(p.storage[size_t(r2)] == r2);
  CHECK(p.offset[size_t(r2)] != p.offset[size_t(r1)]);
}

TEST_CASE("planner: greedy by size reaches the lower bound on hand-made cases") {
  PlannerOptions no_alias;
  no_alias.allow_inplace = false;
  SUBCASE("staggered lifetimes of two sizes") {
    GraphBuilder b;
    const ValueId x = b.input("x", f32({16}));
    const ValueId y = b.input("y", f32({32}));
    const ValueId a = b.relu({x});  // 64 B,  [0, 2]
    const ValueId c = b.relu({y});  // 128 B, [1, 3]
    const ValueId d = b.relu({a});  // 64 B,  [2, 4]
    const ValueId e = b.relu({c});  // 128 B, [3, 5]
    b.output(b.relu({d}), "p");
    b.output(b.relu({e}), "q");
    const Graph g = build(b);
    const Plan p = plan(g, no_alias);
    CHECK(check_plan(g, p, no_alias) == 320);
    CHECK(p.report.arena_bytes == 320);
    CHECK(p.offset[size_t(c)] == 0);
    CHECK(p.offset[size_t(e)] == 128);
    CHECK(p.offset[size_t(a)] == 128);
    CHECK(p.offset[size_t(d)] == 256);
  }
  SUBCASE("a big short-lived buffer between small long-lived ones") {
    GraphBuilder b;
    const ValueId x = b.input("x", f32({4, 4}));
    const ValueId w = b.input("w", f32({4, 64}));
    const ValueId s1 = b.relu({x});          // 64 B, lives to the end
    const ValueId wide = b.matmul({s1, w});  // 1 KiB, [1, 2]
    const ValueId back = b.input("wt", f32({64, 4}));
    const ValueId s2 = b.matmul({wide, back});  // 64 B
    const ValueId s3 = b.add({s1, s2});
    b.output(b.relu({s3}), "y");
    const Graph g = build(b);
    const Plan p = plan(g, no_alias);
    const int64_t peak = check_plan(g, p, no_alias);
    CHECK(p.report.arena_bytes == peak);
    CHECK(p.offset[size_t(wide)] == 0);
  }
  SUBCASE("ties and alignment") {
    GraphBuilder b;
    const ValueId x = b.input("x", f32({3}));  // 12 B, aligned to 64
    ValueId v = x;
    for (int i = 0; i < 6; ++i) v = b.scale({v});
    b.output(v, "y");
    const Graph g = build(b);
    const Plan p = plan(g, no_alias);
    CHECK(check_plan(g, p, no_alias) == 128);
    CHECK(p.report.arena_bytes == 128);
    PlannerOptions tight = no_alias;
    tight.alignment = 4;
    const Plan q = plan(g, tight);
    CHECK(check_plan(g, q, tight) == 24);
    CHECK(q.report.arena_bytes == 24);
  }
}

TEST_CASE("planner: zero-byte values, options and the report") {
  GraphBuilder b;
  const ValueId x = b.input("x", f32({0, 4}));
  const ValueId r1 = b.relu({x});
  const ValueId r2 = b.scale({r1});
  const ValueId r3 = b.relu({r2});
  b.output(r3, "y");
  const Graph g = build(b);
  PlannerOptions no_alias;
  no_alias.allow_inplace = false;
  const Plan p = plan(g, no_alias);
  check_plan(g, p, no_alias);
  CHECK(p.offset[size_t(r1)] >= 0);
  CHECK(p.offset[size_t(r2)] >= 0);
  CHECK(p.report.arena_bytes == 0);
  CHECK(p.report.peak_live_bytes == 0);

  PlannerOptions bad;
  bad.alignment = 48;
  CHECK(plan_memory(g, bad).status().code() == StatusCode::invalid_argument);
  bad.alignment = 0;
  CHECK(plan_memory(g, bad).status().code() == StatusCode::invalid_argument);

  MemoryReport r;
  r.arena_bytes = 3 << 20;
  r.peak_live_bytes = 2 << 20;
  r.weight_bytes_mapped = 1 << 20;
  r.num_values = 7;
  const std::string s = r.to_string();
  CHECK(s.find("3.000 MiB") != std::string::npos);
  CHECK(s.find("1.500") != std::string::npos);  // arena / lower bound
  CHECK(s.find("7") != std::string::npos);
}

TEST_CASE("planner: weights are mapped, not placed") {
  GraphBuilder b;
  static const float wdata[8 * 4] = {};
  const ValueId x = b.input("x", f32({2, 8}));
  const ValueId w = b.weight("w", f32({8, 4}), wdata);
  const ValueId h = b.matmul({x, w});
  const ValueId r = b.relu({h});
  b.output(b.add({r, h}), "y");
  const Graph g = build(b);
  const Plan p = plan(g);
  check_plan(g, p);
  CHECK(p.offset[size_t(w)] == -1);
  CHECK(p.report.weight_bytes_mapped == 128);
  CHECK(p.report.input_bytes == 64);
  CHECK(p.report.output_bytes == 32);
}

// Random DAGs over add/mul/relu/scale/reshape/matmul with rank-2 shapes and random fan-out.
Graph random_graph(std::mt19937& rng) {
  static const float zeros[4096] = {};
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  GraphBuilder b;
  std::vector<ValueId> pool;
  const int num_inputs = pick(1, 3);
  for (int i = 0; i < num_inputs; ++i)
    pool.push_back(b.input("x" + std::to_string(i), f32({pick(1, 6), pick(1, 6)})));
  const int num_nodes = pick(2, 30);
  int weights = 0;
  for (int i = 0; i < num_nodes; ++i) {
    // Prefer recent values so chains (and in-place chances) appear, but fan out too.
    const int back = std::min<int>(int(pool.size()) - 1, pick(0, 3) == 0 ? pick(0, 20) : pick(0, 2));
    const ValueId x = pool[pool.size() - 1 - size_t(back)];
    const TensorDesc& d = b.desc(x);
    const int64_t m = d.dim(0), n = d.dim(1);
    ValueId y = kNoValue;
    switch (pick(0, 5)) {
      case 0:
      case 1: {  // add or mul with a same-shape value, a broadcast row, or itself
        ValueId other = x;
        std::vector<ValueId> same;
        for (ValueId v : pool)
          if (b.desc(v).same_shape(d) && v != x) same.push_back(v);
        const int how = pick(0, 3);
        if (how <= 1 && !same.empty()) {
          other = same[size_t(pick(0, int(same.size()) - 1))];
        } else if (how == 2) {
          other = b.weight("w" + std::to_string(weights++), f32({1, n}), zeros);
        }
        const bool swap = pick(0, 1) == 1;
        const std::vector<ValueId> in =
            swap ? std::vector<ValueId>{other, x} : std::vector<ValueId>{x, other};
        y = pick(0, 1) ? b.add(in) : b.mul(in);
        break;
      }
      case 2: y = b.relu({x}); break;
      case 3: y = b.scale({x}, {.scale = 2.0f}); break;
      case 4: y = b.reshape({x}, pick(0, 1) ? reshape_to({n, m}) : reshape_to({1, m * n})); break;
      case 5: {
        const int64_t k = pick(1, 6);
        const ValueId w = b.weight("w" + std::to_string(weights++), f32({n, k}), zeros);
        y = b.matmul({x, w});
        break;
      }
    }
    REQUIRE_MESSAGE(y != kNoValue, b.status().to_string());
    pool.push_back(y);
  }
  // Outputs: the last value plus a few random intermediates.
  std::vector<ValueId> outs = {pool.back()};
  for (int i = pick(0, 2); i > 0; --i) outs.push_back(pool[size_t(pick(num_inputs, int(pool.size()) - 1))]);
  std::sort(outs.begin(), outs.end());
  outs.erase(std::unique(outs.begin(), outs.end()), outs.end());
  for (size_t i = 0; i < outs.size(); ++i) b.output(outs[i], "y" + std::to_string(i));
  return build(b);
}

TEST_CASE("planner: random DAGs never overlap live buffers and report the exact bound") {
  std::mt19937 rng(20240611);
  int inplace = 0, views = 0;
  for (int t = 0; t < 200; ++t) {
    CAPTURE(t);
    const Graph g = random_graph(rng);
    for (int variant = 0; variant < 4; ++variant) {
      CAPTURE(variant);
      PlannerOptions o;
      o.alignment = variant == 3 ? 4 : 64;
      o.allow_inplace = variant != 1;
      o.allow_views = variant != 2;
      const Plan p = plan(g, o);
      check_plan(g, p, o);
      inplace += p.report.num_inplace;
      views += p.report.num_views;
    }
  }
  // The generator must actually exercise both kinds of aliasing.
  CHECK(inplace > 50);
  CHECK(views > 50);
}

}  // namespace
}  // namespace longrun
