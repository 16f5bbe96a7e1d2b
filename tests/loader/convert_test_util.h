// Helpers of the checkpoint-importer tests: hand-built pickles (byte by byte, so malformed and
// malicious ones are easy to write) and a minimal stored-entry zip writer (the layout torch
// uses: one folder, stored entries, central directory), plus the fixture folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace longrun::convert_tests {

inline std::string checkpoint_dir() { return std::string(LONGRUN_GOLDEN_DIR) + "/checkpoints"; }

inline std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> v(s.size());
  for (size_t i = 0; i < s.size(); ++i) v[i] = std::byte(uint8_t(s[i]));
  return v;
}

// Pickle fragments (protocol 2 opcodes).
namespace pk {
inline std::string le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += char(uint8_t(v >> (8 * i)));
  return s;
}
inline std::string proto() { return std::string("\x80\x02", 2); }
inline std::string str(const std::string& s) { return "X" + le(s.size(), 4) + s; }
inline std::string i8(uint8_t v) { return "K" + std::string(1, char(v)); }
inline std::string global(const std::string& m, const std::string& n) { return "c" + m + "\n" + n + "\n"; }
inline std::string tuple2() { return "\x86"; }
// persistent id ('storage', torch.<cls>, key, 'cpu', numel) loaded with BINPERSID.
inline std::string storage(const std::string& cls, const std::string& key, uint8_t numel) {
  return "(" + str("storage") + global("torch", cls) + str(key) + str("cpu") + i8(numel) + "tQ";
}
// _rebuild_tensor_v2(storage, offset, (sizes), (strides), False, OrderedDict())
inline std::string tensor(const std::string& storage_pid, uint8_t offset, std::vector<uint8_t> sizes,
                          std::vector<uint8_t> strides) {
  std::string s = global("torch._utils", "_rebuild_tensor_v2") + "(" + storage_pid + i8(offset) + "(";
  for (uint8_t d : sizes) s += i8(d);
  s += "t(";
  for (uint8_t d : strides) s += i8(d);
  s += "t\x89" + global("collections", "OrderedDict") + ")RtR";
  return s;
}
// {name: tensor, ...} as an OrderedDict
inline std::string state_dict(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string s = proto() + global("collections", "OrderedDict") + ")R(";
  for (const auto& [k, v] : items) s += str(k) + v;
  return s + "u.";
}
}  // namespace pk

// A zip with stored entries (no zip64; torch writes zip64, the reader takes both).
inline std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  using pk::le;
  std::string out, central;
  for (const auto& [name, data] : entries) {
    const uint64_t local = out.size();
    out += le(0x04034b50, 4) + le(20, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(0, 4) + le(data.size(), 4) +
           le(data.size(), 4) + le(name.size(), 2) + le(0, 2) + name + data;
    central += le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(0, 4) +
               le(data.size(), 4) + le(data.size(), 4) + le(name.size(), 2) + le(0, 2) + le(0, 2) + le(0, 2) +
               le(0, 2) + le(0, 4) + le(local, 4) + name;
  }
  const uint64_t cd = out.size();
  out += central;
  out += le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(entries.size(), 2) + le(entries.size(), 2) +
         le(central.size(), 4) + le(cd, 4) + le(0, 2);
  return out;
}

// A torch-like archive: archive/data.pkl + archive/data/<key> records.
inline std::string make_torch_zip(const std::string& pickle,
                                  const std::vector<std::pair<std::string, std::string>>& storages) {
  std::vector<std::pair<std::string, std::string>> e = {{"archive/data.pkl", pickle}};
  for (const auto& [k, v] : storages) e.emplace_back("archive/data/" + k, v);
  e.emplace_back("archive/version", "3\n");
  return make_zip(e);
}

}  // namespace longrun::convert_tests
