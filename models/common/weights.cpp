#include "common/weights.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <set>

#include "longrun/checked_math.h"
#include "longrun/dtype.h"

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
  WeightStore store;
  for (const ParamSpec& p : table) {
    const SafetensorsEntry* e = file->find(p.name);
    if (e == nullptr) {
      problems.push_back("missing tensor '" + p.name + "' (expected f32" + dims_string(p.dims) + ")");
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
    if (!wanted.contains(e.name))
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
