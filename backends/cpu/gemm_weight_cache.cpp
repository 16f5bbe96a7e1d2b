#include "cpu/gemm_weight_cache.h"

#include <map>
#include <mutex>

namespace longrun::cpu::gemm {
namespace {

struct Cache {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<const PackedWeight>> entries;

  void drop_expired() {
    for (auto it = entries.begin(); it != entries.end();)
      it = it->second.expired() ? entries.erase(it) : std::next(it);
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: prepared graphs may outlive static destruction
  return *c;
}

}  // namespace

Result<std::shared_ptr<const PackedWeight>> packed_weight(const std::string& key, int64_t floats,
                                                          const std::function<Status()>& reserve,
                                                          const std::function<void(float* dst)>& pack,
                                                          bool* created) {
  Cache& c = cache();
  *created = false;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.entries.find(key);
    if (it != c.entries.end())
      if (auto live = it->second.lock()) return std::shared_ptr<const PackedWeight>(std::move(live));
  }
  LR_RETURN_IF_ERROR(reserve());
  auto fresh = std::make_shared<PackedWeight>();
  fresh->floats = AlignedFloats(floats);
  pack(fresh->floats.data());
  std::lock_guard<std::mutex> lock(c.mutex);
  c.drop_expired();
  auto& slot = c.entries[key];
  if (auto live = slot.lock())
    return std::shared_ptr<const PackedWeight>(std::move(live));  // packed meanwhile
  slot = fresh;
  *created = true;
  return std::shared_ptr<const PackedWeight>(std::move(fresh));
}

size_t packed_weight_entries() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.drop_expired();
  return c.entries.size();
}

}  // namespace longrun::cpu::gemm
