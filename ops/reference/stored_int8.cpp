// The registry of stored int8 weights (longrun/ops/stored_int8.h).
#include "longrun/ops/stored_int8.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <new>
#include <string>

namespace longrun::ops::s8 {
namespace {

struct Registry {
  std::mutex mu;
  std::map<const void*, std::shared_ptr<const StoredWeight>> weights;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: handles may outlive static destruction
  return *r;
}

const char* layout_name(LinearWeight l) {
  return l == LinearWeight::nk ? "nk" : l == LinearWeight::kn ? "kn" : "none";
}

}  // namespace

Result<std::shared_ptr<const void>> register_stored_weight(const void* f32_data, StoredWeight w) {
  try {
    auto stored = std::make_shared<const StoredWeight>(std::move(w));
    Registry& r = registry();
    {
      std::lock_guard<std::mutex> lock(r.mu);
      if (!r.weights.emplace(f32_data, stored).second)
        return internal_error("stored int8 weight: the address is already registered");
    }
    // Unregisters when the last copy of the handle goes (constructed in place: never copied).
    struct Handle {
      const void* key;
      explicit Handle(const void* k) : key(k) {}
      Handle(const Handle&) = delete;
      Handle& operator=(const Handle&) = delete;
      ~Handle() {
        Registry& reg = registry();
        std::lock_guard<std::mutex> lock(reg.mu);
        reg.weights.erase(key);
      }
    };
    std::shared_ptr<const void> handle;
    try {
      handle = std::make_shared<const Handle>(f32_data);
    } catch (const std::bad_alloc&) {
      std::lock_guard<std::mutex> lock(r.mu);
      r.weights.erase(f32_data);
      throw;
    }
    return handle;
  } catch (const std::bad_alloc&) {
    return out_of_memory("stored int8 weight: out of memory");
  }
}

std::shared_ptr<const StoredWeight> find_stored_weight(const void* f32_data) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.weights.find(f32_data);
  return it == r.weights.end() ? nullptr : it->second;
}

Result<QuantizedWeight> stored_to_quantized(const StoredWeight& w, LinearWeight layout, int64_t n,
                                            int64_t k) {
  if (w.layout != layout || w.n != n || w.k != k)
    return format_error(std::string("stored int8 weight: quantized as ") + layout_name(w.layout) + " with " +
                        std::to_string(w.n) + " channels of " + std::to_string(w.k) +
                        ", but the graph uses it as a linear layer " + layout_name(layout) + " with " +
                        std::to_string(n) + " channels of " + std::to_string(k));
  QuantizedWeight qw;
  qw.n = n;
  qw.k = k;
  try {
    qw.scale.assign(w.scale, w.scale + n);
    qw.q.resize(size_t(n * k));
  } catch (const std::bad_alloc&) {
    return out_of_memory("stored int8 weight: cannot allocate [" + std::to_string(n) + ", " +
                         std::to_string(k) + "] int8");
  }
  if (layout == LinearWeight::nk) {
    std::copy(w.q, w.q + n * k, qw.q.begin());
  } else {
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < n; ++c) qw.q[size_t(c * k + j)] = w.q[j * n + c];
  }
  return qw;
}

}  // namespace longrun::ops::s8
