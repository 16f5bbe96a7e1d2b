// torch.save readers: the zip, legacy and protocol-4 fixtures (tests/oracles/
// make_torch_checkpoints.py) hold exactly the tensors of mixed.expected.safetensors, bit for
// bit; the malformed-file matrix (truncations at every length, bad offsets, compressed and
// overlapping entries, wrong storage sizes, disallowed globals inside an archive, legacy
// count mismatches) is refused with a clear message and never crashes.
#include "torch_checkpoint.h"

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <map>

#include "convert_test_util.h"
#include "longrun/safetensors.h"
#include "readers.h"

using namespace longrun;
using namespace longrun::convert;
using namespace longrun::convert_tests;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot open " << path);
  return {std::istreambuf_iterator<char>(in), {}};
}

Status read_bytes(const std::string& s, SourceCheckpoint* out, bool lenient = false) {
  const auto b = bytes_of(s);
  ReadOptions o;
  o.lenient = lenient;
  // The views point into `b`, which dies here: callers only look at the Status.
  return read_checkpoint_bytes(b, "t.pt", o, out);
}

void refused(const std::string& file, const std::string& what) {
  SourceCheckpoint ck;
  const Status s = read_bytes(file, &ck);
  REQUIRE_FALSE(s.ok());
  CHECK_MESSAGE(s.message().find(what) != std::string::npos, s.message());
}

const std::string kFloats16 = std::string(16, '\0');

// The first three pickles of a legacy torch.save stream: magic number, protocol 1001, sys_info.
const std::string kLegacyMagic =
    pk::proto() + "\x8a\x0a" + std::string("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 10) + ".";
const std::string kLegacyVersion = pk::proto() + "M" + pk::le(1001, 2) + ".";
const std::string kLegacySysInfo = pk::proto() + "}(" + pk::str("little_endian") + "\x88u.";

}  // namespace

TEST_CASE("torch readers: zip, legacy and protocol-4 fixtures match the expected tensors bit for bit") {
  auto expected = SafetensorsFile::open(checkpoint_dir() + "/mixed.expected.safetensors");
  REQUIRE_MESSAGE(expected.ok(), expected.status().to_string());
  for (const char* name : {"mixed.pt", "mixed.legacy.pt", "mixed.p4.pt"}) {
    CAPTURE(name);
    auto ck = read_checkpoint(checkpoint_dir() + "/" + name, "pytorch", {});
    REQUIRE_MESSAGE(ck.ok(), ck.status().to_string());
    CHECK(ck->tensors.size() == (*expected)->tensors().size());
    for (const SourceTensor& t : ck->tensors) {
      CAPTURE(t.name);
      const std::string dtype(source_dtype_name(t.dtype));
      const SafetensorsEntry* e = (*expected)->find(t.name);
      if (!e)
        e = (*expected)->find(t.name + "@" +
                              (dtype == "f64"   ? "float64"
                               : dtype == "i16" ? "int16"
                                                : "int8"));
      REQUIRE(e);
      if (to_runtime_dtype(t.dtype)) {
        CHECK(std::vector<int64_t>(e->desc.dims().begin(), e->desc.dims().end()) == t.sizes);
      }
      const auto m = materialize(t);
      REQUIRE(m.size() == e->bytes.size());
      CHECK(std::equal(m.begin(), m.end(), e->bytes.begin()));
    }
  }
}

TEST_CASE("torch readers: every truncation of a real zip and legacy file is refused cleanly") {
  for (const char* name : {"mixed.pt", "mixed.legacy.pt"}) {
    const std::string full = slurp(checkpoint_dir() + "/" + name);
    for (size_t len = 0; len < full.size(); len += (len < 64 || full.size() - len < 128) ? 1 : 13) {
      SourceCheckpoint ck;
      const Status s = read_bytes(full.substr(0, len), &ck);
      CHECK_MESSAGE(!s.ok(), name << " cut at " << len << " was accepted");
    }
  }
}

TEST_CASE("torch zip: malformed archives") {
  using namespace pk;
  const std::string good_pkl = state_dict({{"w", tensor(storage("FloatStorage", "0", 4), 0, {4}, {1})}});
  {
    SourceCheckpoint ck;
    const auto b = bytes_of(make_torch_zip(good_pkl, {{"0", kFloats16}}));
    const Status s = read_checkpoint_bytes(b, "t.pt", {}, &ck);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    CHECK(ck.tensors.size() == 1);
  }
  refused(make_torch_zip(good_pkl, {}), "has no record 'archive/data/0'");
  refused(make_torch_zip(good_pkl, {{"0", std::string(12, '\0')}}), "its record has 12");
  const std::string huge =
      state_dict({{"w", tensor("(" + str("storage") + global("torch", "FloatStorage") + str("0") +
                                   str("cpu") + "J" + le(0x7fffffff, 4) + "tQ",
                               0, {4}, {1})}});
  refused(make_torch_zip(huge, {{"0", kFloats16}}), "should hold 2147483647 f32 elements");
  refused(make_torch_zip(state_dict({{"w", tensor(storage("FloatStorage", "0", 4), 3, {2}, {1})}}),
                         {{"0", kFloats16}}),
          "tensor 'w': view (offset 3");
  refused(make_torch_zip(proto() + global("os", "system") + "(" + str("id") + "tR.", {}),
          "refused global 'os.system'");
  refused(make_torch_zip(good_pkl + "N", {{"0", kFloats16}}), "trailing bytes after the pickle's STOP");
  refused(make_zip({{"archive/version", "3\n"}}), "no 'archive/data.pkl'");
  refused(make_zip({{"archive/data.pkl", good_pkl}, {"other/data/0", kFloats16}}),
          "outside the archive folder");
  refused(make_zip({{"archive/data.pkl", good_pkl}, {"archive/data.pkl", good_pkl}}), "duplicate entry");
  refused(make_zip({{"archive/../x", "1"}}), "not a plain relative path");
  refused(make_zip({{"archive/data.pkl", good_pkl}, {"archive/constants.pkl", ""}}), "TorchScript");
  refused(make_zip({{"archive/data.pkl", good_pkl}, {"archive/byteorder", "big"}}), "big-endian");

  std::string z = make_torch_zip(good_pkl, {{"0", kFloats16}});
  const size_t cd = z.find("PK\x01\x02");
  REQUIRE(cd != std::string::npos);
  std::string compressed = z;
  compressed[cd + 10] = 8;  // method deflate
  refused(compressed, "is compressed (method 8)");
  std::string bad_local = z;
  bad_local[cd + 42] = 5;  // local header offset
  refused(bad_local, "local header offset 5 points at no local header");
  std::string bad_size = z;
  bad_size[cd + 20] = bad_size[cd + 24] = char(0xf0);  // stored size beyond the data area
  bad_size[cd + 21] = bad_size[cd + 25] = char(0x7f);
  refused(bad_size, "runs outside the file's data area");
  std::string bad_cd = z;
  bad_cd[bad_cd.size() - 6] = char(0xff);  // central directory offset
  refused(bad_cd, "central directory");
  std::string bad_count = z;
  bad_count[bad_count.size() - 12] = char(0xff);  // total entries
  refused(bad_count, "entries cannot fit");
  // Two central entries pointing at the same local header: overlapping records.
  const std::string a = make_zip({{"archive/data.pkl", good_pkl}, {"archive/data/0", kFloats16}});
  std::string overlap = a;
  const size_t cd2 = overlap.find("PK\x01\x02", overlap.find("PK\x01\x02") + 4);
  overlap.replace(cd2 + 42, 4, std::string(4, '\0'));
  refused(overlap, "local header names a different file");
  std::string crc = z;
  crc[cd + 16] = 1;
  refused(crc, "fails its CRC-32 check");
}

TEST_CASE("torch legacy: malformed streams") {
  using namespace pk;
  const std::string &magic = kLegacyMagic, &version = kLegacyVersion, &sys_info = kLegacySysInfo;
  const std::string obj = state_dict({{"w", tensor("(" + str("storage") + global("torch", "FloatStorage") +
                                                       str("77") + str("cpu") + i8(4) + "NtQ",
                                                   0, {4}, {1})}});
  const std::string keys = proto() + "]" + str("77") + "a.";
  const std::string head = magic + version + sys_info + obj + keys;
  {
    SourceCheckpoint ck;
    const auto b = bytes_of(head + le(4, 8) + kFloats16);
    const Status s = read_checkpoint_bytes(b, "t.pt", {}, &ck);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    REQUIRE(ck.tensors.size() == 1);
    CHECK(ck.format == "pytorch-legacy");
  }
  refused(head + le(5, 8) + kFloats16, "holds 5 elements on disk, its persistent id says 4");
  refused(head + le(4, 8) + kFloats16.substr(0, 8), "needs 16 bytes");
  refused(head + le(4, 8) + kFloats16 + "x", "trailing bytes after the last storage");
  refused(magic + version + proto() + "}(" + str("little_endian") + "\x89u." + obj + keys, "big-endian");
  refused(magic + proto() + "M" + le(1000, 2) + ".", "expected 1001");
  refused(magic + version + sys_info + obj + proto() + "]" + str("78") + "a." + le(4, 8) + kFloats16,
          "storage key '78' is not used");
}

TEST_CASE("torch readers: with opaque_outside_model, unknown globals stay opaque only outside \"model\"") {
  using namespace pk;
  // {"model": {"w": f32[4]}, "args": Namespace(impl=<enum>)} with <model_extra> added to model.
  auto object = [](const std::string& model_extra) {
    const std::string enum_value =
        global("fairseq.dataclass.constants", "DatasetImpl") + "(" + str("mmap") + "tR";
    return proto() + "}(" + str("model") + "}(" + str("w") +
           tensor(storage("FloatStorage", "0", 4), 0, {4}, {1}) + model_extra + "u" + str("args") +
           global("argparse", "Namespace") + ")\x81}(" + str("impl") + enum_value + "ubu.";
  };
  ReadOptions fairseq;
  fairseq.opaque_outside_model = true;
  for (const bool legacy : {false, true}) {
    CAPTURE(legacy);
    auto file = [&](const std::string& obj) {
      return legacy ? kLegacyMagic + kLegacyVersion + kLegacySysInfo + obj + proto() + "]" + str("0") + "a." +
                          le(4, 8) + kFloats16
                    : make_torch_zip(obj, {{"0", kFloats16}});
    };
    const auto ok = bytes_of(file(object("")));
    SourceCheckpoint ck;
    const Status s = read_checkpoint_bytes(ok, "t.pt", fairseq, &ck);
    REQUIRE_MESSAGE(s.ok(), s.to_string());
    CHECK(ck.tensors.size() == 1);
    refused(file(object("")), "refused global 'fairseq.dataclass.constants.DatasetImpl'");  // default: strict
    const auto in_model = bytes_of(file(object(str("x") + global("enum", "Flag"))));
    SourceCheckpoint bad;
    const Status r = read_checkpoint_bytes(in_model, "t.pt", fairseq, &bad);
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(
        r.message().find("refused global 'enum.Flag' in the \"model\" state dict") != std::string::npos,
        r.message());
  }
}
