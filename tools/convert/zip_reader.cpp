#include "zip_reader.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "longrun/checked_math.h"
#include "strict_json.h"

namespace longrun::convert {
namespace {

constexpr uint32_t kEocdSig = 0x06054b50, kZip64LocatorSig = 0x07064b50, kZip64EocdSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;

struct Bytes {
  std::span<const std::byte> s;
  uint64_t u(uint64_t at, int n) const {  // caller has bounds-checked
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(uint8_t(s[at + i])) << (8 * i);
    return v;
  }
  bool has(uint64_t at, uint64_t n) const { return at <= s.size() && n <= s.size() - at; }
};

// A 32-bit central-directory value; 0xFFFFFFFF means "the real value is in the zip64 extra field".
struct Zip64Field {
  const char* name;
  uint64_t value;
  bool from_zip64 = false;
  std::string origin() const { return from_zip64 ? " (from the zip64 extra field)" : ""; }
};

// Reads a central entry's extra field [x, x + len): blocks of (id, length, data). The one zip64
// block (id 0x0001) holds the 64-bit value of each field that is 0xFFFFFFFF, in the order of
// `fields` (uncompressed size, compressed size, local header offset). Returns what is wrong,
// naming the field, or "" when nothing is.
std::string read_zip64_extra(const Bytes& b, uint64_t x, uint64_t len, std::span<Zip64Field> fields) {
  bool seen = false;
  for (const uint64_t end = x + len; end - x >= 4;) {
    const uint64_t id = b.u(x, 2), block = b.u(x + 2, 2);
    if (block > end - x - 4) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%04x", unsigned(id));
      return "extra block " + std::string(hex) + " declares " + std::to_string(block) + " bytes, only " +
             std::to_string(end - x - 4) + " remain in the extra field";
    }
    if (id == 0x0001) {
      if (seen) return "two zip64 extra blocks";
      seen = true;
      uint64_t p = x + 4;
      for (Zip64Field& f : fields) {
        if (f.value != 0xffffffff) continue;
        if (x + 4 + block - p < 8)
          return "the zip64 extra field (" + std::to_string(block) + " bytes) has no room for the " + f.name;
        f.value = b.u(p, 8);
        f.from_zip64 = true;
        p += 8;
      }
    }
    x += 4 + block;
  }
  for (const Zip64Field& f : fields)
    if (f.value == 0xffffffff && !f.from_zip64)
      return std::string(f.name) + " is 0xFFFFFFFF but the entry has no zip64 extra field";
  return {};
}

}  // namespace

uint32_t crc32(std::span<const std::byte> data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xffffffffu;
  for (std::byte b : data) c = table[(c ^ uint8_t(b)) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

Result<ZipArchive> ZipArchive::parse(std::span<const std::byte> file, const std::string& label) {
  const Bytes b{file};
  auto bad = [&](const std::string& what) { return format_error(label + ": zip: " + what); };
  if (file.size() < 22)
    return bad("file of " + std::to_string(file.size()) + " bytes is too small for a zip");

  // End of central directory: the last signature within the final 64 KiB + 22 bytes.
  uint64_t eocd = UINT64_MAX;
  const uint64_t lowest = file.size() > 22 + 65535 ? file.size() - 22 - 65535 : 0;
  for (uint64_t at = file.size() - 22 + 1; at-- > lowest;) {
    if (b.u(at, 4) == kEocdSig && at + 22 + b.u(at + 20, 2) == file.size()) {
      eocd = at;
      break;
    }
  }
  if (eocd == UINT64_MAX) return bad("no end-of-central-directory record (truncated or not a zip)");
  if (b.u(eocd + 4, 2) != 0 || b.u(eocd + 6, 2) != 0) return bad("multi-disk archives are not supported");
  uint64_t count = b.u(eocd + 10, 2), cd_size = b.u(eocd + 12, 4), cd_offset = b.u(eocd + 16, 4);
  if (eocd >= 20 && b.u(eocd - 20, 4) == kZip64LocatorSig) {
    const uint64_t z = b.u(eocd - 20 + 8, 8);
    if (!b.has(z, 56) || b.u(z, 4) != kZip64EocdSig) return bad("zip64 locator points at no zip64 record");
    count = b.u(z + 32, 8);
    cd_size = b.u(z + 40, 8);
    cd_offset = b.u(z + 48, 8);
  } else if (count == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff) {
    return bad("zip64 values without a zip64 record");
  }
  if (!b.has(cd_offset, cd_size) || cd_offset + cd_size > eocd)
    return bad("central directory [" + std::to_string(cd_offset) + ", +" + std::to_string(cd_size) +
               ") lies outside the file");
  if (count > kMaxEntries)
    return bad(std::to_string(count) + " entries (limit " + std::to_string(kMaxEntries) + ")");
  if (count * 46 > cd_size)
    return bad(std::to_string(count) + " entries cannot fit a central directory of " +
               std::to_string(cd_size) + " bytes");

  ZipArchive z;
  z.file_ = file;
  z.label_ = label;
  struct Range {
    uint64_t begin, end;  // [local header, data end)
    size_t entry;
    bool operator<(const Range& o) const { return begin < o.begin; }
  };
  std::vector<Range> ranges;
  uint64_t at = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (at > cd_end || cd_end - at < 46 || b.u(at, 4) != kCentralSig)
      return bad("central directory entry " + std::to_string(i) + " is malformed");
    const uint64_t flags = b.u(at + 8, 2), method = b.u(at + 10, 2);
    const uint64_t name_len = b.u(at + 28, 2), extra_len = b.u(at + 30, 2), comment_len = b.u(at + 32, 2);
    Zip64Field fields[3] = {{"uncompressed size", b.u(at + 24, 4)},
                            {"compressed size", b.u(at + 20, 4)},
                            {"local header offset", b.u(at + 42, 4)}};
    const uint64_t var_len = name_len + extra_len + comment_len;
    if (cd_end - at - 46 < var_len)
      return bad("central directory entry " + std::to_string(i) + " is truncated");
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(file.data() + at + 46), name_len);
    e.crc32 = uint32_t(b.u(at + 16, 4));
    const std::string quoted = json::quote_for_message(e.name);
    if (std::string why = read_zip64_extra(b, at + 46 + name_len, extra_len, fields); !why.empty())
      return bad("entry " + quoted + ": " + why);
    const Zip64Field &size_field = fields[0], &local_field = fields[2];
    const uint64_t size = fields[0].value, comp = fields[1].value, local = fields[2].value;
    at += 46 + var_len;

    if (e.name.empty() || e.name.front() == '/' || e.name.find('\\') != std::string::npos ||
        e.name.find("..") != std::string::npos || json::find_invalid_utf8(e.name) != std::string_view::npos)
      return bad("entry name " + quoted + " is not a plain relative path");
    if (!z.index_.emplace(e.name, z.entries_.size()).second) return bad("duplicate entry " + quoted);
    if (flags & 1) return bad("entry " + quoted + " is encrypted");
    if (method != 0)
      return bad("entry " + quoted + " is compressed (method " + std::to_string(method) +
                 "); torch.save writes stored entries only: re-save the checkpoint with torch.save");
    if (comp != size)
      return bad("entry " + quoted + ": stored sizes differ (compressed size " + std::to_string(comp) +
                 fields[1].origin() + " vs uncompressed size " + std::to_string(size) + size_field.origin() +
                 ")");
    if (!b.has(local, 30) || b.u(local, 4) != kLocalSig)
      return bad("entry " + quoted + ": local header offset " + std::to_string(local) + local_field.origin() +
                 (b.has(local, 30)
                      ? " points at no local header"
                      : " points past the end of the " + std::to_string(file.size()) + "-byte file"));
    const uint64_t lname = b.u(local + 26, 2), lextra = b.u(local + 28, 2);
    e.data_offset = local + 30 + lname + lextra;
    e.size = size;
    if (lname != name_len || !b.has(local + 30, lname) ||
        std::string_view(reinterpret_cast<const char*>(file.data() + local + 30), lname) != e.name)
      return bad("entry " + quoted + ": local header names a different file");
    if (!b.has(e.data_offset, size) || e.data_offset + size > cd_offset)
      return bad("entry " + quoted + ": data [" + std::to_string(e.data_offset) + ", +" +
                 std::to_string(size) + ") runs outside the file's data area (" +
                 (b.has(e.data_offset, size)
                      ? "into the central directory at offset " + std::to_string(cd_offset)
                      : "past the end of the " + std::to_string(file.size()) + "-byte file") +
                 ")" + (size_field.from_zip64 ? ": uncompressed size from the zip64 extra field" : ""));
    ranges.push_back({local, e.data_offset + size, z.entries_.size()});
    z.entries_.push_back(std::move(e));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end) {
      auto where = [&](const Range& r) {
        return json::quote_for_message(z.entries_[r.entry].name) + " [" + std::to_string(r.begin) + ", " +
               std::to_string(r.end) + ")";
      };
      return bad("entries overlap (header and data ranges share bytes): " + where(ranges[i - 1]) + " and " +
                 where(ranges[i]));
    }
  if (z.entries_.empty()) return bad("the archive is empty");
  const std::string& first = z.entries_.front().name;
  const size_t slash = first.find('/');
  if (slash == std::string::npos || slash == 0)
    return bad("entry " + json::quote_for_message(first) + " is not in a folder");
  z.prefix_ = first.substr(0, slash);
  for (const ZipEntry& e : z.entries_)
    if (e.name.compare(0, slash + 1, first, 0, slash + 1) != 0)
      return bad("entry " + json::quote_for_message(e.name) + " is outside the archive folder '" + z.prefix_ +
                 "/'");
  return z;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Result<std::span<const std::byte>> ZipArchive::data(const ZipEntry& e) const {
  auto d = file_.subspan(e.data_offset, e.size);
  if (e.crc32 != 0 && crc32(d) != e.crc32)
    return format_error(label_ + ": zip entry " + json::quote_for_message(e.name) +
                        " fails its CRC-32 check");
  return d;
}

}  // namespace longrun::convert
