#include "source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <unordered_set>

#include "longrun/checked_math.h"
#include "strict_json.h"

namespace longrun::convert {

int64_t SourceTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;  // validated by check_view
  return n;
}

bool SourceTensor::contiguous() const {
  int64_t expect = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= sizes[i];
  }
  return true;
}

namespace {

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

Status check_view(const SourceTensor& t, const std::string& what) {
  auto bad = [&](const std::string& m) { return format_error(what + ": " + m); };
  if (t.sizes.size() != t.strides.size() || t.sizes.size() > 8) return bad("bad rank");
  const uint64_t item = uint64_t(source_dtype_size(t.dtype));
  int64_t numel;
  if (!checked_product(t.sizes, &numel)) return bad("element count overflows");
  if (t.offset < 0) return bad("negative storage offset");
  uint64_t bytes_needed = 0;
  if (numel > 0) {
    uint64_t last = uint64_t(t.offset);  // index of the last element touched
    for (size_t i = 0; i < t.sizes.size(); ++i) {
      uint64_t step;
      if (t.strides[i] < 0) return bad("negative stride");
      if (!checked_mul(uint64_t(t.sizes[i] - 1), uint64_t(t.strides[i]), &step) ||
          !checked_add(last, step, &last))
        return bad("view extent overflows");
    }
    if (!checked_add(last, 1, &last) || !checked_mul(last, item, &bytes_needed))
      return bad("view extent overflows");
  }
  if (bytes_needed > t.storage.size())
    return bad("view (offset " + std::to_string(t.offset) + ", sizes/strides) needs " +
               std::to_string(bytes_needed) + " bytes of its storage, which has " +
               std::to_string(t.storage.size()));
  uint64_t total;
  if (!checked_mul(uint64_t(numel), item, &total) || total > (uint64_t(1) << 40))
    return bad("tensor of " + std::to_string(numel) + " elements is too large");
  // torch.save keeps expanded views as they are (stride 0, e.g. a buffer made with
  // arange(n).expand(...)), so overlapping views are legal; but a view that reads each storage
  // element at most once never materialises to more than its storage, so only an overlapping
  // view can exceed it. Allow that up to a fixed slack for small expanded buffers; beyond it a
  // few bytes of storage could make materialize() allocate up to the 1 TiB cap above.
  if (total > t.storage.size() && total > kMaxExpandedViewBytes)
    return bad("overlapping view (sizes " + list_text(t.sizes) + ", strides " + list_text(t.strides) +
               ") would materialise " + std::to_string(total) + " bytes from a storage of " +
               std::to_string(t.storage.size()) + " bytes; refused above " +
               std::to_string(kMaxExpandedViewBytes) + " bytes");
  return {};
}

std::vector<std::byte> materialize(const SourceTensor& t) {
  const size_t item = size_t(source_dtype_size(t.dtype));
  const int64_t n = t.numel();
  std::vector<std::byte> out(size_t(n) * item);
  if (n == 0) return out;
  if (t.contiguous()) {
    std::memcpy(out.data(), t.storage.data() + size_t(t.offset) * item, out.size());
    return out;
  }
  const size_t rank = t.sizes.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t src = t.offset;
    for (size_t d = 0; d < rank; ++d) src += idx[d] * t.strides[d];
    std::memcpy(out.data() + size_t(k) * item, t.storage.data() + size_t(src) * item, item);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < t.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

namespace {

struct Collector {
  const std::string& label;
  const std::function<Result<std::span<const std::byte>>(const StorageRef&)>& storage_bytes;
  SourceCheckpoint* out;
  std::unordered_set<const PNode*> seen;
  uint64_t visits = 0;

  Status walk(const PNode* v, const std::string& name, int depth) {
    if (depth > kMaxDepth)
      return format_error(label + ": objects nested deeper than " + std::to_string(kMaxDepth));
    if (++visits > 50'000'000) return format_error(label + ": too many objects to visit");
    const std::string shown = name.empty() ? "<root>" : name;
    switch (v->kind) {
      case PKind::tensor: return add(v, name.empty() ? "tensor" : name);
      case PKind::dict:
      case PKind::record:
        if (!seen.insert(v).second) return {};
        for (const auto& [k, child] : v->entries) {
          std::string key;
          if (k->kind == PKind::string)
            key = k->text;
          else if (k->kind == PKind::integer)
            key = std::to_string(k->integer);
          else {
            out->notes.push_back(shown + ": entry with key " + describe(k) + " skipped");
            continue;
          }
          LR_RETURN_IF_ERROR(walk(child, name.empty() ? key : name + "." + key, depth + 1));
        }
        return {};
      case PKind::list:
      case PKind::tuple:
        if (!seen.insert(v).second) return {};
        for (size_t i = 0; i < v->items.size(); ++i)
          LR_RETURN_IF_ERROR(walk(
              v->items[i], name.empty() ? std::to_string(i) : name + "." + std::to_string(i), depth + 1));
        return {};
      case PKind::opaque:
      case PKind::global:
      case PKind::storage: out->notes.push_back(shown + ": " + describe(v) + " (not imported)"); return {};
      default: return {};  // plain scalars and strings: hyper-parameters, versions
    }
  }

  Status add(const PNode* v, const std::string& name) {
    const TensorRef& r = v->tensor;
    const StorageRef& s = r.storage->storage;
    const std::string what = label + ": tensor " + json::quote_for_message(name);
    auto bytes = storage_bytes(s);
    if (!bytes.ok()) return bytes.status().with_context(what);
    SourceTensor t;
    t.name = name;
    t.dtype = r.dtype;
    t.sizes = r.sizes;
    t.strides = r.strides;
    t.offset = r.offset;
    t.storage = *bytes;
    t.storage_id = s.key;
    LR_RETURN_IF_ERROR(check_view(t, what));
    out->tensors.push_back(std::move(t));
    return {};
  }
};

}  // namespace

Status collect_tensors(
    const PNode* root, const std::string& label,
    const std::function<Result<std::span<const std::byte>>(const StorageRef&)>& storage_bytes,
    SourceCheckpoint* out) {
  Collector c{label, storage_bytes, out, {}, 0};
  return c.walk(root, "", 0);
}

Result<std::pair<std::span<const std::byte>, std::shared_ptr<const void>>> map_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return io_error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("'" + path + "' is not a regular file");
  }
  const size_t size = size_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    return std::make_pair(std::span<const std::byte>(), std::shared_ptr<const void>());
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return io_error("cannot map '" + path + "': " + std::strerror(errno));
  std::shared_ptr<const void> owner(p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
  return std::make_pair(std::span<const std::byte>(static_cast<const std::byte*>(p), size), owner);
}

}  // namespace longrun::convert
