// Model: file -> metadata -> family -> config -> parameter table check -> weights; then
// graphs on demand (models/include/longrun/models/model.h).
#include "longrun/models/model.h"

#include <algorithm>
#include <set>

#include "common/architecture.h"
#include "common/weights.h"
#include "longrun/models/linear_weights.h"
#include "registry.h"

namespace longrun {

namespace {

constexpr const char* kFormatKey = "longrun.format";
constexpr const char* kArchKey = "longrun.arch";
constexpr const char* kConfigKey = "longrun.config";
constexpr const char* kFormatVersion = "1";

std::string known_architectures() {
  std::string s;
  for (const models::Family& f : models::families()) s += (s.empty() ? "" : ", ") + std::string(f.arch);
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// A weight quantized in the file must be used by linear layers of the layout it was quantized
// in (its scales are per output channel of that layout; anywhere else they would mean
// something else).
Status check_quantized_layouts(const Graph& g, const std::string& path) {
  std::map<std::string, ops::LinearWeight> linear;
  bool computed = false;
  for (const Value& v : g.values()) {
    if (v.role != ValueRole::weight) continue;
    if (v.desc.dtype() != DType::i8) continue;
    if (!computed) linear = linear_layer_weights(g), computed = true;
    const auto it = linear.find(v.name);
    // Its scales are per output channel of the layout it was quantized in (WeightStore::bind).
    const bool rank2 = v.desc.rank() == 2;
    const bool used_so =
        it != linear.end() && rank2 &&
        ops::s8::scales_match(v.scales, it->second, v.desc.dim(it->second == ops::LinearWeight::nk ? 0 : 1),
                              v.desc.dim(it->second == ops::LinearWeight::nk ? 1 : 0));
    if (used_so) continue;
    const char* want =
        rank2 && v.scales.channels == v.desc.dim(0) && v.scales.stride == v.desc.dim(1) ? "nk" : "kn";
    return format_error(path + ": tensor '" + v.name +
                        "': field layout: quantized as a linear layer's weight " + want + " (" +
                        models::kQuantizationMetadataKey + "), but the graph uses it " +
                        (it == linear.end() ? std::string("other than as a linear layer")
                                            : std::string("as a linear layer's weight ") +
                                                  (it->second == ops::LinearWeight::nk ? "nk" : "kn")));
  }
  return Status::ok_status();
}

}  // namespace

struct Model::Impl {
  std::shared_ptr<const SafetensorsFile> file;
  std::string arch;
  ModelOptions options;
  std::unique_ptr<models::Architecture> def;
  models::WeightStore weights;
  std::vector<ModelInput> inputs;
  std::vector<std::string> outputs;  // model outputs, then debug outputs when enabled
  int num_parameters = 0;
};

std::vector<std::string> model_architectures() {
  std::vector<std::string> out;
  for (const models::Family& f : models::families()) out.emplace_back(f.arch);
  return out;
}

Result<std::vector<ModelParameter>> model_parameters(const std::string& arch,
                                                     const std::string& config_json) {
  const models::Family* family = models::find_family(arch);
  if (family == nullptr)
    return unsupported("unknown architecture '" + arch + "' (this build knows: " + known_architectures() +
                       ")");
  LR_ASSIGN_OR_RETURN(const std::unique_ptr<models::Architecture> def, family->parse_config(config_json));
  std::vector<ModelParameter> out;
  for (const models::ParamSpec& p : def->parameters()) out.push_back({p.name, p.dims});
  return out;
}

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

Result<std::shared_ptr<const Model>> Model::load(const std::string& path, const ModelOptions& options) {
  LR_ASSIGN_OR_RETURN(std::shared_ptr<SafetensorsFile> file, SafetensorsFile::open(path));
  return from_file(file, options);
}

Result<std::shared_ptr<const Model>> Model::from_file(const std::shared_ptr<const SafetensorsFile>& file,
                                                      const ModelOptions& options) {
  if (!file) return invalid_argument("Model::from_file: null file");
  const std::string& label = file->path();
  const auto& meta = file->metadata();
  auto field = [&](const char* key) -> const std::string* {
    auto it = meta.find(key);
    return it == meta.end() ? nullptr : &it->second;
  };
  const std::string* format = field(kFormatKey);
  if (format == nullptr)
    return format_error(label + ": not a longrun model file: __metadata__ has no '" + kFormatKey +
                        "' (native files are written by longrun-convert)");
  if (*format != kFormatVersion)
    return unsupported(label + ": " + kFormatKey + " is '" + *format + "', this build reads '" +
                       kFormatVersion + "'");
  const std::string* arch = field(kArchKey);
  if (arch == nullptr) return format_error(label + ": __metadata__ has no '" + std::string(kArchKey) + "'");
  const models::Family* family = models::find_family(*arch);
  if (family == nullptr)
    return unsupported(label + ": unknown architecture '" + *arch +
                       "' (this build knows: " + known_architectures() + ")");
  const std::string* config = field(kConfigKey);
  if (config == nullptr)
    return format_error(label + ": __metadata__ has no '" + std::string(kConfigKey) + "'");

  auto def = family->parse_config(*config);
  if (!def.ok()) return def.status().with_context(label);

  std::shared_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  m.file = file;
  m.arch = *arch;
  m.options = options;
  m.def = std::move(def).value();
  const std::vector<models::ParamSpec> table = m.def->parameters();
  m.num_parameters = int(table.size());
  LR_ASSIGN_OR_RETURN(m.weights, models::WeightStore::bind(file, table));
  m.inputs = m.def->inputs();
  std::stable_partition(m.inputs.begin(), m.inputs.end(), [](const ModelInput& i) { return i.required; });
  m.outputs = m.def->outputs();
  if (options.debug_outputs) {
    for (std::string& d : m.def->debug_outputs()) m.outputs.push_back(std::move(d));
  }
  return std::shared_ptr<const Model>(std::move(model));
}

const std::string& Model::arch() const { return impl_->arch; }
const std::string& Model::path() const { return impl_->file->path(); }
std::string Model::config_json() const { return impl_->def->config_json(); }
const ModelOptions& Model::options() const { return impl_->options; }
const std::vector<ModelInput>& Model::inputs() const { return impl_->inputs; }
std::optional<InputLengthLimit> Model::max_input_length() const { return impl_->def->max_input_length(); }
int64_t Model::weight_bytes() const { return impl_->weights.bytes(); }
int64_t Model::weight_bytes_copied() const { return impl_->weights.bytes_copied(); }
int Model::num_parameters() const { return impl_->num_parameters; }
const models::Architecture& Model::architecture() const { return *impl_->def; }
const models::WeightStore& Model::weights() const { return impl_->weights; }
std::vector<std::string> Model::output_names() const { return impl_->outputs; }

std::vector<std::string> Model::input_names() const {
  std::vector<std::string> out;
  for (const ModelInput& i : impl_->inputs) out.push_back(i.name);
  return out;
}

std::vector<std::string> Model::required_inputs() const {
  std::vector<std::string> out;
  for (const ModelInput& i : impl_->inputs)
    if (i.required) out.push_back(i.name);
  return out;
}

Result<Graph> Model::build_graph(std::span<const std::string> names,
                                 std::span<const TensorDesc> descs) const {
  const Impl& m = *impl_;
  if (names.size() != descs.size())
    return invalid_argument("build_graph: " + std::to_string(names.size()) + " input names but " +
                            std::to_string(descs.size()) + " descs");
  std::set<std::string, std::less<>> given;
  for (size_t i = 0; i < names.size(); ++i) {
    auto spec = std::find_if(m.inputs.begin(), m.inputs.end(),
                             [&](const ModelInput& in) { return in.name == names[i]; });
    if (spec == m.inputs.end())
      return invalid_argument(m.arch + " has no input '" + names[i] +
                              "' (its inputs: " + join(input_names()) + ")");
    if (!given.insert(names[i]).second) return invalid_argument("input '" + names[i] + "' given twice");
    if (std::find(spec->dtypes.begin(), spec->dtypes.end(), descs[i].dtype()) == spec->dtypes.end()) {
      std::string allowed;
      for (DType t : spec->dtypes) allowed += (allowed.empty() ? "" : ", ") + std::string(dtype_name(t));
      return invalid_argument("input '" + names[i] + "': expected dtype " + allowed + ", found " +
                              descs[i].to_string());
    }
  }
  for (const ModelInput& in : m.inputs)
    if (in.required && !given.contains(in.name))
      return invalid_argument("input '" + in.name + "' is required (" + in.description + ")");

  GraphBuilder b;
  models::GraphContext ctx(b, m.weights, m.options);
  for (size_t i = 0; i < names.size(); ++i) ctx.add_input(names[i], b.input(names[i], descs[i]));
  m.def->build(ctx);
  ctx.finish();
  if (ctx.ok()) {
    // The family's builder must produce exactly the declared outputs and use every parameter.
    if (ctx.produced_outputs() != m.outputs)
      return internal_error(m.arch + ": the graph builder produced outputs [" + join(ctx.produced_outputs()) +
                            "], the architecture declares [" + join(m.outputs) + "]");
    if (ctx.bound_weights().size() != m.weights.size())
      return internal_error(m.arch + ": the graph uses " + std::to_string(ctx.bound_weights().size()) +
                            " of " + std::to_string(m.weights.size()) + " parameters");
  }
  auto g = b.build();
  if (!g.ok()) return g.status().with_context(m.arch);
  LR_RETURN_IF_ERROR(check_quantized_layouts(*g, m.file->path()));
  return g;
}

GraphFactory Model::graph_factory(std::vector<std::string> names) const {
  std::shared_ptr<const Model> self = shared_from_this();
  return [self, names = std::move(names)](std::span<const TensorDesc> descs) -> Result<Graph> {
    return self->build_graph(names, descs);
  };
}

Result<std::unique_ptr<Session>> Model::create_session(const SessionOptions& options,
                                                       std::vector<std::string> names) const {
  if (names.empty()) names = required_inputs();
  return Session::create(graph_factory(names), names, options);
}

}  // namespace longrun
