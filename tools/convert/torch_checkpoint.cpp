#include "torch_checkpoint.h"

#include <cstring>
#include <unordered_map>

#include "longrun/checked_math.h"
#include "strict_json.h"
#include "zip_reader.h"

namespace longrun::convert {
namespace {

// The pickled legacy magic number 0x1950a86a20f9469cfc6c (LONG1, 10 bytes little-endian).
constexpr uint8_t kLegacyMagic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

PickleOptions pickle_options(const ReadOptions& o) {
  PickleOptions p;
  p.lenient = o.lenient;
  p.limits = o.limits;
  return p;
}

Result<uint64_t> storage_nbytes(const StorageRef& s) {
  return checked_mul_or_error(uint64_t(s.numel), uint64_t(source_dtype_size(s.dtype)),
                              "storage '" + s.key + "' byte size");
}

void note_opaque(const PickleDoc& doc, SourceCheckpoint* out) {
  for (const std::string& g : doc.opaque_globals())
    out->notes.push_back("opaque global " + g +
                         " (unknown, kept as an opaque value: no tensor reachable through it)");
}

// The object pickle of a torch file: strict unless options.lenient. With
// options.opaque_outside_model a strict failure is retried leniently, and that parse is kept
// when its root is a dict whose "model" entry holds nothing only lenient mode admits.
Result<std::unique_ptr<PickleDoc>> parse_object_pickle(std::span<const std::byte> data,
                                                       const ReadOptions& options, const std::string& label) {
  auto strict = parse_pickle(data, pickle_options(options), label);
  if (strict.ok() || options.lenient || !options.opaque_outside_model) return strict;
  PickleOptions lenient = pickle_options(options);
  lenient.lenient = true;
  auto doc = parse_pickle(data, lenient, label);
  const PNode* model = doc.ok() ? dict_get((*doc)->root(), "model") : nullptr;
  if (!model) return strict;  // not a {"model": ...} dict, or broken beyond unknown globals
  if (const std::string what = find_lenient_value(model); !what.empty())
    return format_error(
        label + ": refused " + what +
        " in the \"model\" state dict: not on the checkpoint allowlist (unknown globals are kept "
        "opaque only outside \"model\": fairseq args, cfg, extra_state)");
  return doc;
}

}  // namespace

bool looks_like_torch_zip(std::span<const std::byte> f) {
  return f.size() >= 4 && std::memcmp(f.data(), "PK\x03\x04", 4) == 0;
}

bool looks_like_torch_legacy(std::span<const std::byte> f) {
  static const uint8_t head[5] = {0x80, 0x02, 0x8a, 0x0a, 0x6c};
  return f.size() >= 5 && std::memcmp(f.data(), head, 5) == 0;
}

Status read_torch_zip(std::span<const std::byte> file, const std::string& label, const ReadOptions& options,
                      SourceCheckpoint* out) {
  LR_ASSIGN_OR_RETURN(ZipArchive zip, ZipArchive::parse(file, label));
  const std::string p = zip.prefix() + "/";
  if (zip.find(p + "constants.pkl") || zip.find(p + "code/"))
    return unsupported(label + ": a TorchScript archive (torch.jit.save), not a torch.save checkpoint");
  const ZipEntry* pkl = zip.find(p + "data.pkl");
  if (!pkl) return format_error(label + ": zip has no '" + p + "data.pkl' record (not a torch.save archive)");
  if (const ZipEntry* bo = zip.find(p + "byteorder")) {
    LR_ASSIGN_OR_RETURN(auto order, zip.data(*bo));
    const std::string_view s(reinterpret_cast<const char*>(order.data()), order.size());
    if (s == "big") return unsupported(label + ": big-endian checkpoint (byteorder 'big') is not supported");
    if (s != "little") return format_error(label + ": byteorder record is " + json::quote_for_message(s));
  }
  LR_ASSIGN_OR_RETURN(auto pickle_bytes, zip.data(*pkl));
  LR_ASSIGN_OR_RETURN(std::unique_ptr<PickleDoc> doc,
                      parse_object_pickle(pickle_bytes, options, label + ":" + pkl->name));
  if (doc->consumed() != pickle_bytes.size())
    return format_error(label + ": " + std::to_string(pickle_bytes.size() - doc->consumed()) +
                        " trailing bytes after the pickle's STOP in " + pkl->name);
  auto storage_bytes = [&](const StorageRef& s) -> Result<std::span<const std::byte>> {
    LR_ASSIGN_OR_RETURN(uint64_t want, storage_nbytes(s));
    const ZipEntry* e = zip.find(p + "data/" + s.key);
    if (!e) {
      if (want == 0) return std::span<const std::byte>();
      return format_error("storage '" + s.key + "' has no record '" + p + "data/" + s.key +
                          "' in the archive");
    }
    if (e->size != want)
      return format_error("storage '" + s.key + "' should hold " + std::to_string(s.numel) + " " +
                          std::string(source_dtype_name(s.dtype)) + " elements (" + std::to_string(want) +
                          " bytes), its record has " + std::to_string(e->size));
    return zip.data(*e);
  };
  out->format = "pytorch-zip";
  LR_RETURN_IF_ERROR(collect_tensors(doc->root(), label, storage_bytes, out));
  note_opaque(*doc, out);
  out->pickle_root = doc->root();
  out->owners.push_back(std::shared_ptr<const void>(std::move(doc)));
  return {};
}

Status read_torch_legacy(std::span<const std::byte> file, const std::string& label,
                         const ReadOptions& options, SourceCheckpoint* out) {
  const PickleOptions popt = pickle_options(options);
  size_t at = 0;
  auto next = [&](const char* what) -> Result<std::unique_ptr<PickleDoc>> {
    const std::string where = label + " (legacy " + what + " pickle at byte " + std::to_string(at) + ")";
    auto doc = std::string_view(what) == "object" ? parse_object_pickle(file.subspan(at), options, where)
                                                  : parse_pickle(file.subspan(at), popt, where);
    if (doc.ok()) at += (*doc)->consumed();
    return doc;
  };
  LR_ASSIGN_OR_RETURN(auto magic, next("magic"));
  const PNode* m = magic->root();
  if (m->kind != PKind::bigint || m->text.size() != 10 || std::memcmp(m->text.data(), kLegacyMagic, 10) != 0)
    return format_error(label + ": not a legacy torch.save file (wrong magic number)");
  LR_ASSIGN_OR_RETURN(auto proto, next("protocol"));
  if (proto->root()->kind != PKind::integer || proto->root()->integer != 1001)
    return format_error(label + ": legacy protocol version is " + describe(proto->root()) +
                        ", expected 1001");
  LR_ASSIGN_OR_RETURN(auto sys_info, next("sys_info"));
  const PNode* le = dict_get(sys_info->root(), "little_endian");
  if (!le || le->kind != PKind::boolean)
    return format_error(label + ": legacy sys_info lacks 'little_endian'");
  if (!le->boolean) return unsupported(label + ": big-endian legacy checkpoint is not supported");
  LR_ASSIGN_OR_RETURN(auto obj, next("object"));
  LR_ASSIGN_OR_RETURN(auto keys, next("storage keys"));
  if (keys->root()->kind != PKind::list)
    return format_error(label + ": legacy storage key list is " + describe(keys->root()));

  // Storages declared by the object pickle, by key (several persistent ids may repeat a key).
  std::unordered_map<std::string, const StorageRef*> declared;
  for (const PNode* s : obj->storages()) {
    auto [it, inserted] = declared.emplace(s->storage.key, &s->storage);
    if (!inserted && (it->second->dtype != s->storage.dtype || it->second->numel != s->storage.numel))
      return format_error(label + ": storage '" + s->storage.key +
                          "' is declared twice with different types or sizes");
  }
  std::unordered_map<std::string, std::span<const std::byte>> data;
  for (const PNode* k : keys->root()->items) {
    if (k->kind != PKind::string) return format_error(label + ": legacy storage key is " + describe(k));
    auto it = declared.find(k->text);
    if (it == declared.end())
      return format_error(label + ": storage key '" + k->text + "' is not used by the object");
    if (data.count(k->text)) return format_error(label + ": storage key '" + k->text + "' is listed twice");
    const StorageRef& s = *it->second;
    if (file.size() - at < 8) return format_error(label + ": truncated before storage '" + s.key + "'");
    uint64_t count = 0;
    for (int i = 0; i < 8; ++i) count |= uint64_t(uint8_t(file[at + size_t(i)])) << (8 * i);
    at += 8;
    if (count != uint64_t(s.numel))
      return format_error(label + ": storage '" + s.key + "' holds " + std::to_string(count) +
                          " elements on disk, its persistent id says " + std::to_string(s.numel));
    LR_ASSIGN_OR_RETURN(uint64_t bytes, storage_nbytes(s));
    if (bytes > file.size() - at)
      return format_error(label + ": storage '" + s.key + "' needs " + std::to_string(bytes) +
                          " bytes at offset " + std::to_string(at) + ", the file has " +
                          std::to_string(file.size() - at) + " left");
    data.emplace(s.key, file.subspan(at, size_t(bytes)));
    at += size_t(bytes);
  }
  if (at != file.size())
    return format_error(label + ": " + std::to_string(file.size() - at) +
                        " trailing bytes after the last storage");
  auto storage_bytes = [&](const StorageRef& s) -> Result<std::span<const std::byte>> {
    auto it = data.find(s.key);
    if (it == data.end()) return format_error("storage '" + s.key + "' is missing from the storage key list");
    return it->second;
  };
  out->format = "pytorch-legacy";
  LR_RETURN_IF_ERROR(collect_tensors(obj->root(), label, storage_bytes, out));
  note_opaque(*obj, out);
  out->pickle_root = obj->root();
  out->owners.push_back(std::shared_ptr<const void>(std::move(obj)));
  return {};
}

}  // namespace longrun::convert
