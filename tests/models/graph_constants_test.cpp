// Prefix sums use the cumsum op, so the graph constants a model adds do not grow with the
// sequence length: the RoBERTa position ids and fairseq make_positions once multiplied by an
// [N, N] triangular constant (64 MiB at N = 4096), and the Combiner's TF sum pooling by an
// [m, m] one. Here the models are built (not run) at N = 16 and N = 2048 and their weight
// bytes compared: the file parameters are the same, so any difference is an N-dependent
// constant.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/model_test_util.h"

namespace longrun::model_tests {
namespace {

constexpr int64_t kLong = 2048;

// Replaces `from` (which must occur once) in the longrun.config JSON.
void edit_config(EditableFile* f, const std::string& from, const std::string& to) {
  std::string& config = f->metadata["longrun.config"];
  const size_t at = config.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, (from + " not in " + config));
  config.replace(at, from.size(), to);
}

std::shared_ptr<const Model> load(const EditableFile& f) {
  auto m = f.load();
  REQUIRE_MESSAGE(m.ok(), m.status().to_string());
  return m.value();
}

struct GraphFacts {
  int64_t weight_bytes = 0;    // every weight value of the graph: file parameters + constants
  int64_t largest_weight = 0;  // elements of the largest one
  int cumsum_nodes = 0;
  std::vector<std::string> names;  // of the weights, for the failure message
};

GraphFacts facts(const Model& m, const std::vector<std::string>& names,
                 const std::vector<TensorDesc>& descs) {
  Result<Graph> g = m.build_graph(names, descs);
  REQUIRE_MESSAGE(g.ok(), g.status().to_string());
  GraphFacts f;
  for (const Value& v : g->values())
    if (v.role == ValueRole::weight) {
      f.weight_bytes += v.desc.nbytes();
      f.largest_weight = std::max(f.largest_weight, v.desc.numel());
      f.names.push_back(v.name + " " + v.desc.to_string());
    }
  for (const Node& n : g->nodes()) f.cumsum_nodes += n.kind == OpKind::cumsum;
  return f;
}

std::string listing(const GraphFacts& f) {
  std::string s;
  for (const std::string& n : f.names) s += "\n  " + n;
  return s;
}

// The same weights at both lengths but `linear_bytes` (per-length rows of a position table),
// none of them N x N, and the positions from cumsum nodes.
void check_no_length_constants(const GraphFacts& short_graph, const GraphFacts& long_graph, int cumsums,
                               int64_t linear_bytes = 0) {
  CAPTURE(listing(long_graph));
  CHECK(long_graph.weight_bytes == short_graph.weight_bytes + linear_bytes);
  CHECK(long_graph.largest_weight < kLong * kLong);
  CHECK(short_graph.cumsum_nodes == cumsums);
  CHECK(long_graph.cumsum_nodes == cumsums);
}

TEST_CASE("graph constants: roberta positions add nothing that grows with N") {
  // roberta_tiny with a position table long enough for N = 2048 (pad 1: rows pad + 1 + N).
  EditableFile f = EditableFile::read(golden_dir() + "/roberta_tiny.safetensors");
  const int64_t rows = kLong + 2;
  edit_config(&f, "\"max_position_embeddings\":304", "\"max_position_embeddings\":" + std::to_string(rows));
  EditableFile::Entry* pos = f.find("embeddings.position_embeddings.weight");
  REQUIRE(pos != nullptr);
  pos->desc = TensorDesc(pos->desc.dtype(), {rows, pos->desc.dim(1)});
  pos->bytes.resize(size_t(pos->desc.nbytes()));
  auto m = load(f);
  auto at = [&](int64_t n) { return facts(*m, {"input_ids"}, {TensorDesc(DType::i64, {2, n})}); };
  check_no_length_constants(at(16), at(kLong), 1);
}

TEST_CASE("graph constants: fairseq make_positions adds nothing that grows with N") {
  // Sinusoidal positions: a graph holds the table's first pad + 1 + N rows (fairseq grows
  // its table with the input the same way): linear in N, the only difference allowed.
  EditableFile f = EditableFile::read(golden_dir() + "/transformer_base_tiny.safetensors");
  edit_config(&f, "\"max_source_positions\":256", "\"max_source_positions\":" + std::to_string(kLong));
  auto m = load(f);
  auto at = [&](int64_t n) {
    return facts(*m, {"input_ids", "decoder_input_ids"},
                 {TensorDesc(DType::i64, {2, n}), TensorDesc(DType::i64, {2, 5})});
  };
  // Encoder and decoder positions; the encoder's table has kLong - 16 more rows of D = 64.
  check_no_length_constants(at(16), at(kLong), 2, (kLong - 16) * 64 * int64_t(sizeof(float)));
}

TEST_CASE("graph constants: Lasformer's selection adds only O(N) constants") {
  // The selection's causal reach, per-query key counts and keep masks once were [Nq, Nk] and
  // [Nk + 1, k] constants (64 MiB per selection at N = 4096); now iotas, a cumsum and a
  // [Nk + 1, 1] table. Encoder self-selection at N; decoder at a fixed T.
  EditableFile f = EditableFile::read(golden_dir() + "/lasformer_r2_tiny.safetensors");
  edit_config(&f, "\"max_source_positions\":256", "\"max_source_positions\":" + std::to_string(kLong));
  auto m = load(f);
  auto at = [&](int64_t n) {
    return facts(*m, {"input_ids", "decoder_input_ids"},
                 {TensorDesc(DType::i64, {1, n}), TensorDesc(DType::i64, {1, 5})});
  };
  const GraphFacts short_graph = at(16), long_graph = at(kLong);
  CAPTURE(listing(long_graph));
  CHECK(long_graph.largest_weight <= (kLong + 2) * 64);  // the sinusoid rows of D = 64 at most
  // Per extra position: a sinusoid row (D = 64) plus a few scalars per selection constant.
  CHECK(long_graph.weight_bytes - short_graph.weight_bytes <=
        (kLong - 16) * int64_t(sizeof(float)) * (64 + 16));
}

TEST_CASE("graph constants: the Combiner's sum pooling is a cumsum, not a triangular matmul") {
  EditableFile f = EditableFile::read(golden_dir() + "/combiner_mixture_bidir_sum.safetensors");
  auto m = load(f);
  const GraphFacts g = facts(*m, {"input_ids"}, {TensorDesc(DType::i64, {1, 64})});
  CAPTURE(listing(g));
  CHECK(g.cumsum_nodes > 0);
  for (const std::string& n : g.names) CHECK(n.find("triangle") == std::string::npos);
}

}  // namespace
}  // namespace longrun::model_tests
