// The zip reader's zip64 handling and its overlap checks (docs/checkpoints.md#zip-reader), on archives
// written byte by byte here: the per-entry zip64 extended-information extra field (id 0x0001;
// central entries with 0xFFFFFFFF sizes / local header offset, local headers with 0xFFFFFFFF
// sizes) reads correctly, and every lie in it (truncated block, block overrunning the extra
// field, sizes past the archive, an offset outside it, a missing or doubled block) is refused
// naming the entry and the field. Entries whose ranges overlap each other or the central
// directory (the overlapping-entry zip-bomb technique) are refused naming both.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>

#include "convert_test_util.h"
#include "readers.h"
#include "zip_reader.h"

using namespace longrun;
using namespace longrun::convert;
using namespace longrun::convert_tests;
using pk::le;

namespace {

constexpr uint64_t kWide = 0xffffffff;  // "the value is in the zip64 extra field"

std::string extra_block(uint16_t id, const std::string& body) {
  return le(id, 2) + le(body.size(), 2) + body;
}

// What one central directory entry says about a member: its 32-bit uncompressed/compressed
// size and local header offset fields, and its extra field.
struct Central {
  uint64_t size32, local32;
  std::string extra;
};
// Given the member's index, real size and real local header offset.
using CentralFor = std::function<Central(size_t index, uint64_t size, uint64_t local)>;

// What miniz writes for a zip64 member: every 32-bit field wide, the real values in the block.
Central honest_zip64(size_t, uint64_t size, uint64_t local) {
  return {kWide, kWide, extra_block(1, le(size, 8) + le(size, 8) + le(local, 8))};
}

// Stored members; local headers with 0xFFFFFFFF sizes and a zip64 block; zip64 end records
// (record + locator) after the central directory, as torch.save writes them.
std::string make_zip64(const std::vector<std::pair<std::string, std::string>>& members,
                       const CentralFor& central_for = honest_zip64) {
  std::string out, central;
  for (size_t i = 0; i < members.size(); ++i) {
    const auto& [name, data] = members[i];
    const uint64_t local = out.size();
    const uint32_t crc = crc32(bytes_of(data));
    const std::string local_extra = extra_block(1, le(data.size(), 8) + le(data.size(), 8));
    out += le(0x04034b50, 4) + le(45, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(crc, 4) + le(kWide, 4) +
           le(kWide, 4) + le(name.size(), 2) + le(local_extra.size(), 2) + name + local_extra + data;
    const Central c = central_for(i, data.size(), local);
    central += le(0x02014b50, 4) + le(45, 2) + le(45, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(crc, 4) +
               le(c.size32, 4) + le(c.size32, 4) + le(name.size(), 2) + le(c.extra.size(), 2) + le(0, 2) +
               le(0, 2) + le(0, 2) + le(0, 4) + le(c.local32, 4) + name + c.extra;
  }
  const uint64_t cd = out.size(), n = members.size();
  out += central;
  const uint64_t record = out.size();
  out += le(0x06064b50, 4) + le(44, 8) + le(45, 2) + le(45, 2) + le(0, 4) + le(0, 4) + le(n, 8) + le(n, 8) +
         le(central.size(), 8) + le(cd, 8);
  out += le(0x07064b50, 4) + le(0, 4) + le(record, 8) + le(1, 4);
  out += le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(0xffff, 2) + le(0xffff, 2) + le(kWide, 4) +
         le(kWide, 4) + le(0, 2);
  return out;
}

// Parses `file` and expects a refusal whose message holds each of `parts`.
void refused(const std::string& file, std::initializer_list<std::string> parts) {
  const auto bytes = bytes_of(file);
  auto z = ZipArchive::parse(bytes, "t.pt");
  REQUIRE_FALSE(z.ok());
  for (const std::string& p : parts)
    CHECK_MESSAGE(z.status().message().find(p) != std::string::npos, z.status().message());
}

// One member, its central entry given by `central`.
std::string one_member(const std::function<Central(uint64_t size, uint64_t local)>& central) {
  return make_zip64({{"archive/data.pkl", "0123456789"}},
                    [&](size_t, uint64_t size, uint64_t local) { return central(size, local); });
}

}  // namespace

TEST_CASE("zip64: per-entry extended-information fields read correctly") {
  using namespace pk;
  const std::string pkl = state_dict({{"w", tensor(storage("FloatStorage", "0", 4), 0, {4}, {1})}});
  std::string floats(16, '\0');
  const float v[4] = {1.5f, -2.0f, 3.25f, 1e-3f};
  std::memcpy(floats.data(), v, 16);
  const std::string file =
      make_zip64({{"archive/data.pkl", pkl}, {"archive/data/0", floats}, {"archive/version", "3\n"}});
  const auto bytes = bytes_of(file);
  SourceCheckpoint ck;
  const Status s = read_checkpoint_bytes(bytes, "t.pt", {}, &ck);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  REQUIRE(ck.tensors.size() == 1);
  const auto got = materialize(ck.tensors[0]);
  REQUIRE(got.size() == 16);
  CHECK(std::memcmp(got.data(), v, 16) == 0);

  // Only the wide fields are in the block, in the order uncompressed size, compressed size,
  // local header offset; blocks of other ids (here a timestamp) come before it and are skipped.
  const std::string only_offset =
      make_zip64({{"archive/a", "AAAA"}, {"archive/b", "BBBBBB"}}, [](size_t, uint64_t size, uint64_t local) {
        return Central{size, kWide,
                       extra_block(0x5455, std::string("\x01\0\0\0\0", 5)) + extra_block(1, le(local, 8))};
      });
  const std::string only_sizes =
      make_zip64({{"archive/a", "AAAA"}, {"archive/b", "BBBBBB"}}, [](size_t, uint64_t size, uint64_t local) {
        return Central{kWide, local, extra_block(1, le(size, 8) + le(size, 8))};
      });
  for (const std::string* f : {&only_offset, &only_sizes}) {
    const auto b = bytes_of(*f);
    auto z = ZipArchive::parse(b, "t.pt");
    REQUIRE_MESSAGE(z.ok(), z.status().to_string());
    REQUIRE(z->entries().size() == 2);
    auto data = z->data(*z->find("archive/b"));
    REQUIRE_MESSAGE(data.ok(), data.status().to_string());
    CHECK(std::string(reinterpret_cast<const char*>(data->data()), data->size()) == "BBBBBB");
  }
}

TEST_CASE("zip64: lying extra fields are refused naming the entry and the field") {
  const std::string entry = "entry 'archive/data.pkl'";
  // The block stops before the local header offset it must carry.
  refused(one_member([](uint64_t size, uint64_t) {
            return Central{kWide, kWide, extra_block(1, le(size, 8) + le(size, 8))};
          }),
          {entry, "the zip64 extra field (16 bytes) has no room for the local header offset"});
  refused(one_member([](uint64_t, uint64_t) {
            return Central{kWide, kWide, extra_block(1, "1234567")};
          }),
          {entry, "has no room for the uncompressed size"});
  // The block's length runs past the extra field.
  refused(one_member([](uint64_t size, uint64_t local) {
            std::string e = extra_block(1, le(size, 8) + le(size, 8) + le(local, 8));
            e[2] = 32;
            return Central{kWide, kWide, e};
          }),
          {entry, "extra block 0x0001 declares 32 bytes, only 24 remain in the extra field"});
  // Sizes far past the archive.
  refused(one_member([](uint64_t, uint64_t local) {
            const uint64_t huge = uint64_t(1) << 40;
            return Central{kWide, kWide, extra_block(1, le(huge, 8) + le(huge, 8) + le(local, 8))};
          }),
          {entry, "data [", ", +1099511627776) runs outside the file's data area (past the end of the",
           "uncompressed size from the zip64 extra field"});
  // Compressed and uncompressed sizes disagree (a stored entry must have them equal).
  refused(one_member([](uint64_t size, uint64_t local) {
            return Central{kWide, kWide, extra_block(1, le(size, 8) + le(size + 1, 8) + le(local, 8))};
          }),
          {entry,
           "stored sizes differ (compressed size 11 (from the zip64 extra field) vs uncompressed size 10"});
  // A local header offset outside the file, and one inside it that points at no header.
  refused(
      one_member([](uint64_t size, uint64_t) {
        return Central{kWide, kWide, extra_block(1, le(size, 8) + le(size, 8) + le(uint64_t(1) << 33, 8))};
      }),
      {entry, "local header offset 8589934592 (from the zip64 extra field) points past the end of the"});
  refused(one_member([](uint64_t size, uint64_t) {
            return Central{kWide, kWide, extra_block(1, le(size, 8) + le(size, 8) + le(3, 8))};
          }),
          {entry, "local header offset 3 (from the zip64 extra field) points at no local header"});
  // 0xFFFFFFFF with no block to resolve it, and two blocks that could disagree.
  refused(one_member([](uint64_t, uint64_t local) {
            return Central{kWide, local, ""};
          }),
          {entry, "uncompressed size is 0xFFFFFFFF but the entry has no zip64 extra field"});
  refused(one_member([](uint64_t size, uint64_t local) {
            const std::string block = extra_block(1, le(size, 8) + le(size, 8) + le(local, 8));
            return Central{kWide, kWide, block + block};
          }),
          {entry, "two zip64 extra blocks"});
}

TEST_CASE("zip: overlapping entries and entries reaching into the central directory are refused") {
  const std::vector<std::pair<std::string, std::string>> members = {{"archive/a", "AAAA"},
                                                                    {"archive/b", "BBBBBB"}};
  const std::string honest = make_zip64(members);
  const uint64_t b_local = honest.find("PK\x03\x04", 4);
  const uint64_t cd = honest.find("PK\x01\x02");
  // 'a' claims every byte up to the central directory: its data covers b's header and data
  // (how overlapping-entry zip bombs reuse one payload).
  refused(make_zip64(
              members,
              [&](size_t i, uint64_t size, uint64_t local) {
                const uint64_t claimed = i == 0 ? cd - (local + 30 + 9 + 20) : size;
                return Central{kWide, kWide, extra_block(1, le(claimed, 8) + le(claimed, 8) + le(local, 8))};
              }),
          {"entries overlap (header and data ranges share bytes): 'archive/a' [0, " + std::to_string(cd) +
           ") and 'archive/b' [" + std::to_string(b_local) + ", " + std::to_string(cd) + ")"});
  // 'b' runs into the central directory that follows it.
  refused(make_zip64(
              members,
              [&](size_t i, uint64_t size, uint64_t local) {
                const uint64_t claimed = i == 1 ? size + 40 : size;
                return Central{kWide, kWide, extra_block(1, le(claimed, 8) + le(claimed, 8) + le(local, 8))};
              }),
          {"entry 'archive/b': data [",
           ", +46) runs outside the file's data area (into the central directory at offset " +
               std::to_string(cd) + ")"});
}
