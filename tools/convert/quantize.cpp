// quantize_native_file (quantize.h).
#include "quantize.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/weights.h"
#include "longrun/models/linear_weights.h"
#include "longrun/models/model.h"
#include "longrun/ops/reduced_precision.h"
#include "longrun/safetensors.h"

namespace longrun::convert {
namespace {

// A graph of the model for the smallest usual input: every required input [1, N] (N = 8, or
// less where the model allows less) of its first accepted dtype. Which matmuls are linear
// layers does not depend on B or N.
Result<Graph> probe_graph(const Model& model) {
  int64_t n = 8;
  if (const auto limit = model.max_input_length())
    n = std::max<int64_t>(1, std::min<int64_t>(n, limit->tokens));
  std::vector<std::string> names;
  std::vector<TensorDesc> descs;
  for (const ModelInput& in : model.inputs()) {
    if (!in.required || in.dtypes.empty()) continue;
    names.push_back(in.name);
    descs.push_back(TensorDesc(in.dtypes[0], {int64_t{1}, n}));
  }
  return model.build_graph(names, descs);
}

}  // namespace

Result<QuantizeSummary> quantize_native_file(const std::string& in_path, const std::string& out_path,
                                             bool* usage_error) {
  if (usage_error != nullptr) *usage_error = false;
  LR_ASSIGN_OR_RETURN(const std::shared_ptr<SafetensorsFile> file, SafetensorsFile::open(in_path));
  if (file->metadata().contains(models::kQuantizationMetadataKey))
    return invalid_argument(in_path + ": already quantized (metadata '" + models::kQuantizationMetadataKey +
                            "')");
  LR_ASSIGN_OR_RETURN(const std::shared_ptr<const Model> model, Model::from_file(file));
  auto graph = probe_graph(*model);
  if (!graph.ok()) return graph.status().with_context("quantize: building " + model->arch() + "'s graph");
  const std::map<std::string, ops::LinearWeight> linear = linear_layer_weights(*graph);
  if (linear.empty()) {
    if (usage_error != nullptr) *usage_error = true;
    return invalid_argument("--quantize int8: architecture '" + model->arch() +
                            "' has no linear layer to quantize (docs/usage.md#precision)");
  }

  QuantizeSummary summary;
  summary.bytes_before = file->file_size();
  std::vector<SafetensorsWriteEntry> entries;
  std::vector<std::vector<std::byte>> buffers;  // the new q and scale bytes
  buffers.reserve(2 * linear.size());
  nlohmann::json weights = nlohmann::json::object();
  for (const SafetensorsEntry& e : file->tensors()) {
    const auto it = linear.find(e.name);
    if (it == linear.end()) {
      entries.push_back({e.name, e.desc, e.bytes});
      continue;
    }
    const bool nk = it->second == ops::LinearWeight::nk;
    if (!dtype_is_float(e.desc.dtype()) || e.desc.rank() != 2)
      return internal_error("quantize: tensor '" + e.name + "' is " + e.desc.to_string() +
                            ", not the float matrix its graph uses");
    const int64_t n = e.desc.dim(nk ? 0 : 1), k = e.desc.dim(nk ? 1 : 0);
    auto qw = ops::s8::quantize_weight(e.bytes.data(), e.desc.dtype(), it->second, n, k);
    if (!qw.ok()) return qw.status().with_context(in_path + ": tensor '" + e.name + "'");
    std::vector<std::byte> q(size_t(n * k)), scale(size_t(n) * sizeof(float));
    for (int64_t c = 0; c < n; ++c)
      for (int64_t j = 0; j < k; ++j)
        q[size_t(nk ? c * k + j : j * n + c)] = std::byte(uint8_t(qw->q[size_t(c * k + j)]));
    std::memcpy(scale.data(), qw->scale.data(), scale.size());
    buffers.push_back(std::move(q));
    entries.push_back({e.name, e.desc.with_dtype(DType::i8), buffers.back()});
    buffers.push_back(std::move(scale));
    entries.push_back({e.name + models::kScaleSuffix, TensorDesc(DType::f32, {n}), buffers.back()});
    weights[e.name] = nk ? "nk" : "kn";
    ++summary.weights;
  }
  std::map<std::string, std::string> metadata = file->metadata();
  metadata[models::kQuantizationMetadataKey] =
      nlohmann::json{{"scheme", models::kQuantizationScheme}, {"weights", weights}}.dump();
  LR_RETURN_IF_ERROR(write_safetensors(out_path, entries, metadata));

  // Read back: the loader's checks, and the layouts against the graph.
  LR_ASSIGN_OR_RETURN(const std::shared_ptr<const Model> check, Model::load(out_path));
  auto g = probe_graph(*check);
  if (!g.ok()) return g.status().with_context("quantize: checking " + out_path);
  LR_ASSIGN_OR_RETURN(const std::shared_ptr<SafetensorsFile> written, SafetensorsFile::open(out_path));
  summary.bytes_after = written->file_size();
  return summary;
}

}  // namespace longrun::convert
