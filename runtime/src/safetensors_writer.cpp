// safetensors writer: 64-byte aligned tensors, padded header, "__pad.N" fillers, atomic
// temp + fsync + rename (docs/checkpoints.md#file-layout-and-atomic-write, docs/design.md#native-model-file).
//
// Layout: u64 header length, the header JSON (starts with '{', padded with trailing spaces so
// the data section starts at a multiple of 64), then the tensors in the caller's order. A
// tensor whose offset is not a multiple of 64 is preceded by a U8 filler tensor "__pad.N"
// covering the gap, so the data section stays fully indexed (no holes) as the format requires.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <set>

#include "longrun/checked_math.h"
#include "longrun/safetensors.h"
#include "safetensors_format.h"
#include "strict_json.h"

namespace longrun {
namespace {

namespace fmt = safetensors_format;
using json::quote_for_message;

struct Slot {
  const std::byte* data = nullptr;  // nullptr: a filler (zero bytes)
  uint64_t size = 0;
};

struct Layout {
  std::string prefix;  // length prefix + padded header JSON
  std::vector<Slot> slots;
  uint64_t data_size = 0;
};

Status check_utf8(std::string_view s, const std::string& what) {
  if (json::find_invalid_utf8(s) != std::string_view::npos)
    return invalid_argument(what + " " + quote_for_message(s) + " is not valid UTF-8");
  return Status::ok_status();
}

Status check_entry(const SafetensorsWriteEntry& t) {
  const std::string name = "tensor " + quote_for_message(t.name);
  if (t.name.empty()) return invalid_argument("tensor name is empty");
  if (t.name.size() > fmt::kMaxNameBytes)
    return invalid_argument(name + ": name is " + std::to_string(t.name.size()) + " bytes; at most " +
                            std::to_string(fmt::kMaxNameBytes) + " are allowed");
  LR_RETURN_IF_ERROR(check_utf8(t.name, "tensor name"));
  if (t.name == fmt::kMetadataKey || fmt::is_pad_name(t.name))
    return invalid_argument(name + ": names '__metadata__' and '__pad*' are reserved");
  if (!t.desc.is_contiguous())
    return invalid_argument(name + ": desc " + t.desc.to_string() + " is not contiguous");
  for (int64_t d : t.desc.dims())
    if (uint64_t(d) > fmt::kMaxInteger)
      return out_of_range(name + ": dimension " + std::to_string(d) + " exceeds the format's limit 2^48-1");
  if (t.bytes.size() != uint64_t(t.desc.nbytes()))
    return invalid_argument(name + ": " + std::to_string(t.bytes.size()) + " bytes given, desc " +
                            t.desc.to_string() + " needs " + std::to_string(t.desc.nbytes()));
  return Status::ok_status();
}

void append_tensor_json(std::string* h, std::string_view name, std::string_view code,
                        std::span<const int64_t> dims, uint64_t begin, uint64_t end) {
  h->push_back(',');
  json::append_quoted(h, name);
  *h += ":{\"dtype\":";
  json::append_quoted(h, code);
  *h += ",\"shape\":[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) h->push_back(',');
    *h += std::to_string(dims[i]);
  }
  *h += "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
}

Result<Layout> plan_layout(std::span<const SafetensorsWriteEntry> tensors,
                           const std::map<std::string, std::string>& metadata) {
  std::map<std::string, std::string> meta = metadata;
  if (const auto it = meta.find("format"); it != meta.end() && it->second != "pt")
    return invalid_argument("__metadata__ 'format' must be \"pt\" (found " + quote_for_message(it->second) +
                            "): the writer always sets it so reference tooling can load the file");
  meta["format"] = "pt";
  std::string h = "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [k, v] : meta) {
    LR_RETURN_IF_ERROR(check_utf8(k, "__metadata__ key"));
    LR_RETURN_IF_ERROR(check_utf8(v, "__metadata__ value"));
    if (!first) h.push_back(',');
    first = false;
    json::append_quoted(&h, k);
    h.push_back(':');
    json::append_quoted(&h, v);
  }
  h.push_back('}');

  Layout layout;
  std::set<std::string_view> names;
  uint64_t cursor = 0;
  int pads = 0;
  for (const SafetensorsWriteEntry& t : tensors) {
    LR_RETURN_IF_ERROR(check_entry(t));
    if (!names.insert(t.name).second)
      return invalid_argument("duplicate tensor name " + quote_for_message(t.name));
    uint64_t aligned, end;
    if (!checked_align_up(cursor, fmt::kAlignment, &aligned) || aligned > fmt::kMaxInteger)
      return out_of_range("data section exceeds the format's offset limit 2^48-1");
    if (aligned != cursor) {
      const int64_t fill = int64_t(aligned - cursor);
      const std::string pad = std::string(fmt::kPadPrefix) + "." + std::to_string(pads++);
      append_tensor_json(&h, pad, "U8", std::span<const int64_t>(&fill, 1), cursor, aligned);
      layout.slots.push_back({nullptr, aligned - cursor});
    }
    if (!checked_add(aligned, t.bytes.size(), &end) || end > fmt::kMaxInteger)
      return out_of_range("tensor " + quote_for_message(t.name) +
                          ": data section exceeds the format's offset limit 2^48-1");
    append_tensor_json(&h, t.name, dtype_safetensors_name(t.desc.dtype()), t.desc.dims(), aligned, end);
    layout.slots.push_back({reinterpret_cast<const std::byte*>(t.bytes.data()), t.bytes.size()});
    cursor = end;
  }
  h.push_back('}');
  // Trailing spaces so that 8 + N is a multiple of 64: the data section, and with it every
  // tensor, is 64-byte aligned relative to the file start (and so in an mmap).
  const uint64_t padded = (8 + h.size() + fmt::kAlignment - 1) / fmt::kAlignment * fmt::kAlignment - 8;
  if (padded > fmt::kMaxHeaderBytes)
    return out_of_range("header would be " + std::to_string(padded) + " bytes; readers accept at most " +
                        std::to_string(fmt::kMaxHeaderBytes));
  h.append(size_t(padded - h.size()), ' ');
  layout.prefix.resize(8);
  for (int i = 0; i < 8; ++i) layout.prefix[size_t(i)] = char((padded >> (8 * i)) & 0xFF);
  layout.prefix += h;
  layout.data_size = cursor;
  return layout;
}

// write() until done, retrying EINTR and short writes.
bool write_all(int fd, const void* p, uint64_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const size_t chunk = n > (uint64_t{1} << 30) ? size_t{1} << 30 : size_t(n);
    const ssize_t w = ::write(fd, c, chunk);
    if (w < 0 && errno == EINTR) continue;
    if (w == 0) errno = EIO;
    if (w <= 0) return false;
    c += w;
    n -= uint64_t(w);
  }
  return true;
}

Status write_layout(int fd, const Layout& layout) {
  static const std::byte kZeros[fmt::kAlignment] = {};
  bool ok = write_all(fd, layout.prefix.data(), layout.prefix.size());
  for (size_t i = 0; ok && i < layout.slots.size(); ++i) {
    const Slot& s = layout.slots[i];
    ok = s.data ? write_all(fd, s.data, s.size) : write_all(fd, kZeros, s.size);  // fillers < 64 bytes
  }
  if (!ok) return io_error(std::string("write failed: ") + std::strerror(errno));
  if (::fsync(fd) != 0) return io_error(std::string("fsync failed: ") + std::strerror(errno));
  return Status::ok_status();
}

std::string parent_directory(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Result<std::vector<std::byte>> serialize_safetensors(std::span<const SafetensorsWriteEntry> tensors,
                                                     const std::map<std::string, std::string>& metadata) {
  try {
    LR_ASSIGN_OR_RETURN(const Layout layout, plan_layout(tensors, metadata));
    std::vector<std::byte> out(layout.prefix.size() + size_t(layout.data_size));
    std::memcpy(out.data(), layout.prefix.data(), layout.prefix.size());
    size_t at = layout.prefix.size();
    for (const Slot& s : layout.slots) {
      if (s.data && s.size) std::memcpy(out.data() + at, s.data, size_t(s.size));  // fillers stay zero
      at += size_t(s.size);
    }
    return out;
  } catch (const std::bad_alloc&) {
    return out_of_memory("out of memory while serializing safetensors");
  }
}

Status write_safetensors(const std::string& path, std::span<const SafetensorsWriteEntry> tensors,
                         const std::map<std::string, std::string>& metadata) {
  const std::string where = quote_for_message(path, 512);
  try {
    auto layout = plan_layout(tensors, metadata);
    if (!layout.ok()) return layout.status().with_context(where);

    // A unique temp name next to the target, so rename() stays within one filesystem.
    static std::atomic<uint64_t> counter{0};
    std::string tmp;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
      tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
      fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0)
      return io_error(where + ": cannot create temporary file " + quote_for_message(tmp, 512) + ": " +
                      std::strerror(errno));
    // Until the rename succeeds, every exit (errors, exceptions) removes the temp file; the
    // target, if any, is never touched.
    struct TempGuard {
      const std::string& name;
      bool armed = true;
      ~TempGuard() {
        if (armed) ::unlink(name.c_str());
      }
    } guard{tmp};
    Status s = write_layout(fd, *layout);
    if (::close(fd) != 0 && s.ok()) s = io_error(std::string("close failed: ") + std::strerror(errno));
    if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
      s = io_error(std::string("rename of the temporary file failed: ") + std::strerror(errno));
    if (!s.ok()) return s.with_context(where);
    guard.armed = false;
    // Make the rename itself durable. Best effort: some filesystems refuse fsync on a
    // directory, and the new file is already complete and in place.
    const int dir = ::open(parent_directory(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      (void)::fsync(dir);
      ::close(dir);
    }
    return Status::ok_status();
  } catch (const std::bad_alloc&) {
    return out_of_memory(where + ": out of memory while writing safetensors");
  }
}

}  // namespace longrun
