#include "cpu/gemm_weight_cache.h"

#include <map>
#include <mutex>

namespace longrun::cpu::gemm {
namespace {

struct Entry {
  std::weak_ptr<const void> value;
  std::type_index type = std::type_index(typeid(void));
};

struct Cache {
  std::mutex mutex;
  std::map<std::string, Entry> entries;

  void drop_expired() {
    for (auto it = entries.begin(); it != entries.end();)
      it = it->second.value.expired() ? entries.erase(it) : std::next(it);
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: prepared graphs may outlive static destruction
  return *c;
}

Status other_type(const std::string& key) {
  return internal_error("weight cache: the entry \"" + key + "\" holds another type of packed weight");
}

}  // namespace

Result<std::shared_ptr<const void>> shared_entry(
    const std::string& key, std::type_index type, const std::function<Status()>& reserve,
    const std::function<Result<std::shared_ptr<const void>>()>& make, bool* created) {
  Cache& c = cache();
  *created = false;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.entries.find(key);
    if (it != c.entries.end())
      if (auto live = it->second.value.lock()) {
        if (it->second.type != type) return other_type(key);
        return live;
      }
  }
  LR_RETURN_IF_ERROR(reserve());
  LR_ASSIGN_OR_RETURN(std::shared_ptr<const void> fresh, make());
  std::lock_guard<std::mutex> lock(c.mutex);
  c.drop_expired();
  Entry& slot = c.entries[key];
  if (auto live = slot.value.lock()) {  // made meanwhile
    if (slot.type != type) return other_type(key);
    return live;
  }
  slot.value = fresh;
  slot.type = type;
  *created = true;
  return fresh;
}

Result<std::shared_ptr<const PackedWeight>> packed_weight(const std::string& key, int64_t floats,
                                                          const std::function<Status()>& reserve,
                                                          const std::function<void(float* dst)>& pack,
                                                          bool* created) {
  return shared_weight<PackedWeight>(
      key, reserve,
      [&]() -> Result<std::shared_ptr<const PackedWeight>> {
        auto fresh = std::make_shared<PackedWeight>();
        fresh->floats = AlignedFloats(floats);
        pack(fresh->floats.data());
        return std::shared_ptr<const PackedWeight>(std::move(fresh));
      },
      created);
}

size_t packed_weight_entries() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.drop_expired();
  return c.entries.size();
}

}  // namespace longrun::cpu::gemm
