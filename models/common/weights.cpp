#include "common/weights.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>
#include <set>

#include "longrun/checked_math.h"
#include "longrun/dtype.h"
#include "longrun/ops/reduced_precision.h"

namespace longrun::models {
namespace {

std::string dims_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// A contiguous f32 copy of `entry` (f32 copied, f16/bf16 widened exactly).
Result<BoundWeight> widened_copy(const SafetensorsEntry& entry) {
  const int64_t n = entry.desc.numel();
  std::shared_ptr<float[]> copy;
  try {
    copy = std::shared_ptr<float[]>(new float[size_t(std::max<int64_t>(n, 1))]);
  } catch (const std::bad_alloc&) {
    return out_of_memory("weight '" + entry.name + "': cannot allocate " + std::to_string(n * 4) +
                         " bytes for its f32 copy");
  }
  const std::byte* src = entry.bytes.data();
  for (int64_t i = 0; i < n; ++i) {
    switch (entry.desc.dtype()) {
      case DType::f32: std::memcpy(&copy[size_t(i)], src + 4 * i, 4); break;
      case DType::f16: {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        copy[size_t(i)] = f16_to_f32(h);
        break;
      }
      case DType::bf16: {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        copy[size_t(i)] = bf16_to_f32(h);
        break;
      }
      default: return internal_error("widened_copy: not a float dtype");
    }
  }
  BoundWeight w;
  w.desc = entry.desc.with_dtype(DType::f32);
  w.data = copy.get();
  w.owner = std::shared_ptr<const void>(copy, copy.get());
  w.copied = true;
  return w;
}

// longrun.quantization: {"scheme": "int8-per-channel", "weights": {name: "nk" | "kn", ...}}.
Status parse_quantization(const SafetensorsFile& file, std::map<std::string, ops::LinearWeight>* out) {
  const auto it = file.metadata().find(kQuantizationMetadataKey);
  if (it == file.metadata().end()) return Status::ok_status();
  const std::string where = file.path() + ": metadata '" + kQuantizationMetadataKey + "'";
  const auto j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return format_error(where + ": expected a JSON object {\"scheme\", \"weights\"}, found " +
                        (j.is_discarded() ? std::string("text that does not parse") : j.dump()));
  for (const auto& [k, v] : j.items())
    if (k != "scheme" && k != "weights") return format_error(where + ": unknown field '" + k + "'");
  if (!j.contains("scheme") || j["scheme"] != kQuantizationScheme)
    return format_error(where + ": field 'scheme': expected \"" + kQuantizationScheme + "\", found " +
                        (j.contains("scheme") ? j["scheme"].dump() : std::string("nothing")));
  if (!j.contains("weights") || !j["weights"].is_object())
    return format_error(where + ": field 'weights': expected an object {name: \"nk\" | \"kn\"}, found " +
                        (j.contains("weights") ? j["weights"].dump() : std::string("nothing")));
  for (const auto& [name, layout] : j["weights"].items()) {
    if (layout != "nk" && layout != "kn")
      return format_error(where + ": weight '" + name + "': expected layout \"nk\" or \"kn\", found " +
                          layout.dump());
    (*out)[name] = layout == "nk" ? ops::LinearWeight::nk : ops::LinearWeight::kn;
  }
  return Status::ok_status();
}

// Checks a quantized weight (q `e`, scales `s`) and binds q in the file with a copy of its
// scales. Problems go to `problems`; errors are allocation ones.
Result<bool> bind_quantized(const std::shared_ptr<const SafetensorsFile>& file, const ParamSpec& p,
                            const SafetensorsEntry& e, const SafetensorsEntry* s, ops::LinearWeight layout,
                            std::vector<std::string>* problems, BoundWeight* out) {
  const std::string name = "tensor '" + p.name + "'";
  if (e.desc.dtype() != DType::i8) {
    problems->push_back(name + ": listed in " + kQuantizationMetadataKey + ", expected dtype I8, found " +
                        std::string(dtype_safetensors_name(e.desc.dtype())));
    return false;
  }
  const auto dims = e.desc.dims();
  if (!std::equal(dims.begin(), dims.end(), p.dims.begin(), p.dims.end()) || dims.size() != 2) {
    problems->push_back(name + ": expected shape " + dims_string(p.dims) +
                        " (a rank-2 linear weight), found " + dims_string(dims));
    return false;
  }
  const bool nk = layout == ops::LinearWeight::nk;
  const int64_t n = dims[nk ? 0 : 1], k = dims[nk ? 1 : 0];
  const std::string scale_name = "tensor '" + p.name + kScaleSuffix + "'";
  if (s == nullptr) {
    problems->push_back(name + ": quantized weight without its scales: missing " + scale_name +
                        " (expected F32[" + std::to_string(n) + "])");
    return false;
  }
  if (s->desc.dtype() != DType::f32 || s->desc.rank() != 1 || s->desc.dim(0) != n) {
    problems->push_back(scale_name + ": expected F32[" + std::to_string(n) +
                        "] (one scale per output channel, " + (nk ? "nk" : "kn") + " layout), found " +
                        std::string(dtype_safetensors_name(s->desc.dtype())) + dims_string(s->desc.dims()));
    return false;
  }
  std::shared_ptr<float[]> scale;
  try {
    scale = std::shared_ptr<float[]>(new float[size_t(std::max<int64_t>(n, 1))]);
  } catch (const std::bad_alloc&) {
    return out_of_memory("weight '" + p.name + "': cannot allocate " + std::to_string(n * 4) +
                         " bytes for its scales");
  }
  std::memcpy(scale.get(), s->bytes.data(), size_t(n) * 4);
  for (int64_t c = 0; c < n; ++c) {
    if (!std::isfinite(scale[size_t(c)]) || scale[size_t(c)] < 0.0f) {
      problems->push_back(scale_name + ": element " + std::to_string(c) + " is " +
                          std::to_string(scale[size_t(c)]) + ", expected a finite scale >= 0");
      return false;
    }
  }
  const auto* q = reinterpret_cast<const int8_t*>(e.bytes.data());
  for (int64_t i = 0; i < n * k; ++i) {
    if (q[i] < -ops::s8::kQMax) {
      problems->push_back(name + ": element [" + std::to_string(i / dims[1]) + ", " +
                          std::to_string(i % dims[1]) + "] is " + std::to_string(int(q[i])) +
                          ", expected a value in [-127, 127]");
      return false;
    }
  }
  // The mapping (q) and the scales live together.
  std::shared_ptr<std::pair<std::shared_ptr<const void>, std::shared_ptr<float[]>>> owner;
  try {
    owner = std::make_shared<std::pair<std::shared_ptr<const void>, std::shared_ptr<float[]>>>(file->owner(),
                                                                                               scale);
  } catch (const std::bad_alloc&) {
    return out_of_memory("weight '" + p.name + "': out of memory");
  }
  out->desc = e.desc;
  out->data = q;
  out->owner = std::shared_ptr<const void>(owner, q);
  out->scales = ChannelScales{scale.get(), n, nk ? k : 1};
  return true;
}

}  // namespace

void add_linear(std::vector<ParamSpec>* table, const std::string& prefix, int64_t out, int64_t in,
                bool bias) {
  table->push_back({prefix + ".weight", {out, in}, true});
  if (bias) table->push_back({prefix + ".bias", {out}, false});  // matmul's bias input is f32
}

void add_layer_norm(std::vector<ParamSpec>* table, const std::string& prefix, int64_t dim) {
  table->push_back({prefix + ".weight", {dim}, true});
  table->push_back({prefix + ".bias", {dim}, true});
}

void add_embedding(std::vector<ParamSpec>* table, const std::string& prefix, int64_t rows, int64_t dim) {
  table->push_back({prefix + ".weight", {rows, dim}, true});
}

Result<WeightStore> WeightStore::bind(const std::shared_ptr<const SafetensorsFile>& file,
                                      std::span<const ParamSpec> table) {
  std::vector<std::string> problems;
  std::set<std::string, std::less<>> wanted;
  for (const ParamSpec& p : table) {
    if (!wanted.insert(p.name).second) return internal_error("parameter table lists '" + p.name + "' twice");
  }
  std::map<std::string, ops::LinearWeight> quantized;
  LR_RETURN_IF_ERROR(parse_quantization(*file, &quantized));
  std::set<std::string, std::less<>> scales;  // the "<name>.scale" companions
  for (const auto& [name, layout] : quantized) {
    if (!wanted.contains(name))
      problems.push_back("tensor '" + name + "': listed in " + kQuantizationMetadataKey +
                         " but not a parameter of this model");
    scales.insert(name + kScaleSuffix);
  }
  WeightStore store;
  for (const ParamSpec& p : table) {
    const SafetensorsEntry* e = file->find(p.name);
    if (e == nullptr) {
      problems.push_back("missing tensor '" + p.name + "' (expected f32" + dims_string(p.dims) + ")");
      continue;
    }
    if (const auto q = quantized.find(p.name); q != quantized.end()) {
      BoundWeight w;
      LR_ASSIGN_OR_RETURN(const bool ok, bind_quantized(file, p, *e, file->find(p.name + kScaleSuffix),
                                                        q->second, &problems, &w));
      if (!ok) continue;
      const int64_t scale_bytes = w.scales.channels * int64_t(sizeof(float));
      store.bytes_copied_ += scale_bytes;
      store.bytes_ += w.desc.nbytes() + scale_bytes;
      store.weights_.emplace(p.name, std::move(w));
      continue;
    }
    if (e->desc.dtype() == DType::i8) {
      problems.push_back("tensor '" + p.name + "': dtype I8 but not listed in " + kQuantizationMetadataKey +
                         " (a quantized weight needs its layout there and its \"" + p.name + kScaleSuffix +
                         "\" scales)");
      continue;
    }
    const DType t = e->desc.dtype();
    if (!dtype_is_float(t)) {
      problems.push_back("tensor '" + p.name + "': expected dtype F32, F16 or BF16, found " +
                         std::string(dtype_safetensors_name(t)));
      continue;
    }
    const auto dims = e->desc.dims();
    if (!std::equal(dims.begin(), dims.end(), p.dims.begin(), p.dims.end())) {
      problems.push_back("tensor '" + p.name + "': expected shape " + dims_string(p.dims) + ", found " +
                         dims_string(dims));
      continue;
    }
    BoundWeight w;
    const void* data = e->bytes.data();
    const bool in_place =
        (t == DType::f32 && aligned_to(data, 4)) || (t != DType::f32 && p.half_ok && aligned_to(data, 2));
    if (in_place) {
      w.desc = e->desc;
      w.data = data;
      w.owner = file->owner();
    } else {
      LR_ASSIGN_OR_RETURN(w, widened_copy(*e));
      store.bytes_copied_ += w.desc.nbytes();
    }
    store.bytes_ += w.desc.nbytes();
    store.weights_.emplace(p.name, std::move(w));
  }
  for (const SafetensorsEntry& e : file->tensors()) {
    if (scales.contains(e.name)) continue;
    if (e.name.ends_with(kScaleSuffix) && wanted.contains(e.name.substr(0, e.name.size() - 6)))
      problems.push_back("unexpected tensor '" + e.name + "': scales of '" +
                         e.name.substr(0, e.name.size() - 6) + "', which is not listed as quantized in " +
                         kQuantizationMetadataKey);
    else if (!wanted.contains(e.name))
      problems.push_back("unexpected tensor '" + e.name + "' " + e.desc.to_string() +
                         " (not a parameter of this model)");
  }
  if (!problems.empty()) {
    std::string m = file->path() + ": the tensors do not match the model's parameter table (" +
                    std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s") + "): ";
    const size_t shown = std::min<size_t>(problems.size(), 20);
    for (size_t i = 0; i < shown; ++i) m += (i ? "; " : "") + problems[i];
    if (shown < problems.size()) m += "; and " + std::to_string(problems.size() - shown) + " more";
    return format_error(m);
  }
  return store;
}

const BoundWeight* WeightStore::find(std::string_view name) const {
  auto it = weights_.find(name);
  return it == weights_.end() ? nullptr : &it->second;
}

}  // namespace longrun::models
