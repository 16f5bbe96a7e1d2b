// Model: a native longrun model file (safetensors + __metadata__) loaded, validated and ready
// to build graphs for Session.
//
// A native file carries, in its safetensors __metadata__:
//   "longrun.format"  "1"                     (the native format version)
//   "longrun.arch"    e.g. "fourier-lra"      (a family of models/registry.cpp; see
//                                              model_architectures())
//   "longrun.config"  JSON object              (the family's config; unknown keys are errors)
// and exactly the tensors the family's parameter table asks for under that config (names as
// the official checkpoints; shapes implied by the config). Model::load checks all of it and
// reports every problem with the file, the tensor or field, expected vs found.
//
// Weights are bound zero-copy from the memory-mapped file when they are f32 (and aligned to
// their element size). f16/bf16 weights stay as they are where the consuming op accepts them
// (matmul B, layer_norm gamma/beta, embedding tables); everything else is widened to f32 once
// at load into memory the model owns (weight_bytes_copied() reports it).
//
// Thread safety: a loaded Model is immutable; build_graph / graph_factory / create_session
// may be called from any thread, and several sessions may share one model's weights.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "longrun/dtype.h"
#include "longrun/graph.h"
#include "longrun/safetensors.h"
#include "longrun/session.h"
#include "longrun/status.h"
#include "longrun/tensor_desc.h"

namespace longrun {

namespace models {
class Architecture;
class WeightStore;
}  // namespace models

struct ModelOptions {
  // Adds the family's intermediate values as extra graph outputs after the model outputs,
  // named "debug.*" (e.g. "debug.embeddings", "debug.layer0.filtered",
  // "debug.layer1.output"), so a mismatch against a golden points at a layer. Off by default:
  // debug outputs keep their buffers alive and cost memory.
  bool debug_outputs = false;
};

// One graph input a model accepts.
struct ModelInput {
  std::string name;           // e.g. "input_ids", "attention_mask"
  bool required = true;       // optional inputs may be left out of build_graph / sessions
  std::vector<DType> dtypes;  // accepted dtypes
  std::string description;    // shape and meaning, e.g. "[B, N] token ids"
};

// The longest input_ids sequence a model accepts and where that limit comes from.
struct InputLengthLimit {
  int64_t tokens = 0;  // N <= tokens
  std::string source;  // e.g. "max_position_embeddings of the config"
};

// The architectures this build knows ("fourier-lra", ...), in registry order.
std::vector<std::string> model_architectures();

// One tensor of an architecture's parameter table: its canonical name and shape.
struct ModelParameter {
  std::string name;
  std::vector<int64_t> dims;
};
// The exact tensor set a native file of `arch` with `config_json` must hold (what Model::load
// checks), e.g. to write random weights for a benchmark. Errors: unsupported for an unknown
// arch, format_error for a config that does not parse (as Model::load).
Result<std::vector<ModelParameter>> model_parameters(const std::string& arch, const std::string& config_json);

class Model : public std::enable_shared_from_this<Model> {
 public:
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Maps and validates a native model file. Errors: io_error / format_error from the
  // safetensors reader; format_error for missing or bad metadata, a config that does not
  // parse or has a bad, missing or unknown field (named), and for a tensor set that differs
  // from the parameter table (each missing, unexpected, wrong-shape or wrong-dtype tensor
  // named with expected vs found); unsupported for an unknown architecture.
  static Result<std::shared_ptr<const Model>> load(const std::string& path, const ModelOptions& options = {});
  // Same, from an already opened file (e.g. SafetensorsFile::parse of a buffer).
  static Result<std::shared_ptr<const Model>> from_file(const std::shared_ptr<const SafetensorsFile>& file,
                                                        const ModelOptions& options = {});

  const std::string& arch() const;
  const std::string& path() const;  // the file's path (or label)
  // The config as parsed, re-serialised with every field (defaults filled in).
  std::string config_json() const;
  const ModelOptions& options() const;

  // The inputs the model accepts, required ones first.
  const std::vector<ModelInput>& inputs() const;
  std::vector<std::string> input_names() const;      // every input, in inputs() order
  std::vector<std::string> required_inputs() const;  // the required ones only
  // The longest input_ids length N build_graph accepts (the error it gives past it names the
  // same source), or nullopt for a family without such a limit.
  std::optional<InputLengthLimit> max_input_length() const;
  // Graph output names in graph order: the model outputs, then "debug.*" ones when enabled.
  std::vector<std::string> output_names() const;

  // Builds the graph for the named inputs (each of `names` once; every required input
  // present) with the given descs. Shape rules are the family's (e.g. fourier-lra:
  // input_ids i32/i64 [B, N] with 1 <= N <= max_seq_len; attention_mask [B, N]). Errors name
  // the input and say expected vs found; out_of_range for a sequence longer than the model
  // allows.
  Result<Graph> build_graph(std::span<const std::string> names, std::span<const TensorDesc> descs) const;
  // A GraphFactory over build_graph for Session::create; the descs it receives are in the
  // order of `names`. The factory keeps the model alive.
  GraphFactory graph_factory(std::vector<std::string> names) const;
  // Session::create over graph_factory(names); empty names = the required inputs.
  Result<std::unique_ptr<Session>> create_session(const SessionOptions& options,
                                                  std::vector<std::string> names = {}) const;

  int64_t weight_bytes() const;         // bytes of all parameters as bound
  int64_t weight_bytes_copied() const;  // of which copied at load (widened or misaligned)
  int num_parameters() const;           // tensors in the parameter table

  // The family definition and the bound weights, for graphs other than the forward pass
  // (generation's encoder and decoder-step graphs, models/generate.cpp). models/ internals.
  const models::Architecture& architecture() const;
  const models::WeightStore& weights() const;

 private:
  Model();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace longrun
