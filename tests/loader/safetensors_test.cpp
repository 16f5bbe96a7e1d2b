// safetensors reader: a matrix of hand-made malformed files (each must fail with the expected
// code and a message naming the file, tensor and field), the edge cases that must be
// accepted, and corruption sweeps that must never crash. Writer round trips live in
// safetensors_writer_test.cpp.
#include "longrun/safetensors.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

using namespace longrun;

namespace {

constexpr const char* kLabel = "bad.safetensors";

// 8-byte little-endian length (`declared`, default header.size()), the header, then `data`
// bytes (0, 1, 2, ...).
std::vector<std::byte> make_file(std::string_view header, size_t data = 0,
                                 std::optional<uint64_t> declared = std::nullopt) {
  const uint64_t n = declared.value_or(header.size());
  std::vector<std::byte> b;
  for (int i = 0; i < 8; ++i) b.push_back(std::byte((n >> (8 * i)) & 0xFF));
  for (char c : header) b.push_back(std::byte(static_cast<unsigned char>(c)));
  for (size_t i = 0; i < data; ++i) b.push_back(std::byte(i & 0xFF));
  return b;
}

std::string entry(std::string_view name, std::string_view dtype, std::string_view shape, uint64_t begin,
                  uint64_t end) {
  std::string s = "\"";
  s += name;
  s += "\":{\"dtype\":\"";
  s += dtype;
  s += "\",\"shape\":";
  s += shape;
  s += ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
  return s;
}

std::string obj(std::initializer_list<std::string> members) {
  std::string s = "{";
  for (const std::string& m : members) {
    if (s.size() > 1) s += ',';
    s += m;
  }
  return s + "}";
}

Result<std::shared_ptr<SafetensorsFile>> parse_bytes(const std::vector<std::byte>& b) {
  return SafetensorsFile::parse(b, nullptr, kLabel);
}

struct BadCase {
  std::string what;
  std::vector<std::byte> bytes;
  StatusCode code;
  std::string needle;
  std::string needle2;  // e.g. the tensor or field the message must name
};

std::vector<BadCase> bad_cases() {
  const std::string a16 = entry("a", "F32", "[4]", 0, 16);
  const std::string valid = obj({a16});
  std::vector<BadCase> c;
  const auto add = [&](std::string what, std::vector<std::byte> bytes, StatusCode code, std::string needle,
                       std::string needle2 = "") {
    c.push_back({std::move(what), std::move(bytes), code, std::move(needle), std::move(needle2)});
  };
  const auto F = StatusCode::format_error;
  // Length prefix and header bounds.
  add("empty buffer", {}, F, "at least 8");
  add("5 bytes", std::vector<std::byte>(5), F, "at least 8");
  add("header length over 100 MB", make_file("{}", 0, 100'000'001), F, "exceeds the limit of 100000000");
  add("header length 2^64-1", make_file("{}", 0, ~uint64_t{0}), F, "exceeds the limit");
  add("header length past the end", make_file("{}", 16, 1000), F,
      "needs 8 + 1000 bytes but the file has only 26");
  add("header length 0", make_file("", 0), F, "JSON object", "end of header");
  // Encoding and JSON syntax.
  add("non-UTF-8 byte", make_file("{\"a\xff\":{}}"), F, "not valid UTF-8", "header byte 3");
  add("overlong UTF-8", make_file("{\"\xc0\xaf\":{}}"), F, "not valid UTF-8");
  add("UTF-8 encoded surrogate", make_file("{\"\xed\xa0\x80\":{}}"), F, "not valid UTF-8");
  add("truncated UTF-8 sequence", make_file("{\"a\":{}}\xe2\x82"), F, "not valid UTF-8");
  add("lone surrogate escape", make_file(R"({"\ud800x":{}})"), F, "lone high surrogate");
  add("lone low surrogate escape", make_file(R"({"\udc00":{}})"), F, "lone low surrogate");
  add("not JSON", make_file("hello"), F, "JSON object", "'hello'");
  add("not JSON: missing value", make_file(R"({"a":})"), F, "expected an object", "tensor 'a'");
  add("not an object", make_file("[1,2]"), F, "JSON object", "'['");
  add("unterminated string", make_file(R"({"a)"), F, "unterminated string");
  add("unterminated object", make_file(R"({"a":{"dtype":"F32")"), F, "',' or '}'");
  add("trailing comma", make_file("{" + a16 + ",}", 16), F, "expected a string");
  add("bytes after the object", make_file(valid + " x", 16), F, "after the header's JSON object");
  add("second object", make_file(valid + "{}", 16), F, "after the header's JSON object");
  add("raw control character", make_file("{\"a\tb\":{}}"), F, "raw control character \\x09");
  add("invalid escape", make_file(R"({"a\q":{}})"), F, "invalid escape");
  add("short \\u escape", make_file(R"({"a\u12":{}})"), F, "invalid \\u escape");
  add("deep nesting", make_file("{\"a\":" + std::string(100000, '[')), F, "expected an object");
  add("deep nesting in metadata", make_file("{\"__metadata__\":{\"k\":" + std::string(100000, '{')), F,
      "metadata values must be strings");
  // Offsets.
  add("overlapping offsets", make_file(obj({a16, entry("b", "F32", "[4]", 8, 24)}), 24), F,
      "overlap tensor 'a' [0, 16]", "tensor 'b'");
  add("identical ranges", make_file(obj({a16, entry("b", "F32", "[4]", 0, 16)}), 16), F, "overlap");
  add("out-of-bounds offsets", make_file(obj({entry("a", "F32", "[250]", 0, 1000)}), 16), F,
      "extend past the end of the file", "tensor 'a'");
  add("gap between tensors", make_file(obj({a16, entry("b", "F32", "[4]", 32, 48)}), 48), F,
      "gap of 16 bytes after tensor 'a'", "tensor 'b'");
  add("first tensor not at 0", make_file(obj({entry("a", "F32", "[4]", 8, 24)}), 24), F,
      "start of the data section");
  add("end before begin", make_file(obj({entry("a", "F32", "[0]", 16, 8)}), 16), F, "end is before begin");
  add("shape x dtype != bytes", make_file(obj({entry("w", "F32", "[2, 3]", 0, 20)}), 20), F,
      "needs 24 bytes but data_offsets [0, 20] span 20", "tensor 'w'");
  add("BF16 size mismatch", make_file(obj({entry("w", "BF16", "[3]", 0, 12)}), 12), F, "needs 6 bytes");
  add("truncated file", make_file(valid, 12), F, "extend past the end of the file", "truncated");
  add("trailing bytes", make_file(valid, 20), F, "4 trailing bytes");
  add("data but no tensors", make_file("{}", 8), F, "8 trailing bytes");
  // Duplicates.
  add("duplicate tensor names", make_file(obj({a16, entry("a", "F32", "[4]", 16, 32)}), 32), F,
      "duplicate tensor name 'a'");
  add("duplicate __metadata__", make_file(R"({"__metadata__":{},"__metadata__":{}})"), F,
      "duplicate key '__metadata__'");
  add("duplicate metadata key", make_file(R"({"__metadata__":{"k":"1","k":"2"}})"), F, "duplicate key 'k'",
      "__metadata__");
  add("duplicate field", make_file(R"({"a":{"dtype":"F32","dtype":"F32"}})"), F, "duplicate field 'dtype'",
      "tensor 'a'");
  // Integers: plain, non-negative, <= 2^48 - 1, exact.
  const auto shape_case = [&](std::string what, std::string shape, StatusCode code, std::string needle,
                              std::string needle2 = "field 'shape'") {
    add(std::move(what), make_file(obj({entry("s", "F32", shape, 0, 16)}), 16), code, std::move(needle),
        std::move(needle2));
  };
  shape_case("overflowing shape", "[1099511627776, 1099511627776]", StatusCode::overflow,
             "element count overflows", "tensor 's'");
  shape_case("overflow before a zero dim", "[1099511627776, 1099511627776, 0]", StatusCode::overflow,
             "overflows", "tensor 's'");
  add("byte size overflows", make_file(obj({entry("s", "F32", "[2147483648, 2147483648]", 0, 16)}), 16),
      StatusCode::overflow, "byte size");
  shape_case("negative integer", "[-4]", F, "plain non-negative integer");
  shape_case("negative zero", "[-0, 4]", F, "found '-0'");
  shape_case("float", "[4.0]", F, "no fraction or exponent");
  shape_case("exponent", "[4e0]", F, "found '4e0'");
  shape_case("leading plus", "[+4]", F, "found '+4'");
  shape_case("leading zero", "[04]", F, "leading zeros");
  shape_case("2^48", "[281474976710656]", F, "exceeds the maximum 281474976710655");
  shape_case("30 digits", "[123456789012345678901234567890]", F, "exceeds the maximum");
  shape_case("string dim", "[\"4\"]", F, "plain non-negative integer");
  shape_case("NaN dim", "[NaN]", F, "found 'NaN'");
  shape_case("null shape", "null", F, "an array of dimensions");
  shape_case("rank 7", "[1, 1, 1, 1, 1, 1, 4]", StatusCode::unsupported,
             "rank 7 exceeds longrun's runtime limit of 6");
  add("offset 2^48", make_file(obj({entry("a", "U8", "[0]", 281474976710656, 281474976710656)})), F,
      "exceeds the maximum", "field 'data_offsets'");
  add("float offset", make_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1.0]}})", 1), F,
      "no fraction or exponent");
  add("three offsets", make_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}})", 1), F,
      "exactly 2 integers [begin, end], found 3");
  // Schema.
  add("unknown dtype", make_file(obj({entry("a", "F33", "[4]", 0, 16)}), 16), F, "unknown dtype 'F33'",
      "tensor 'a'");
  add("lower-case dtype", make_file(obj({entry("a", "f32", "[4]", 0, 16)}), 16), F, "unknown dtype 'f32'");
  add("unsupported dtype", make_file(obj({entry("a", "F64", "[2]", 0, 16)}), 16), StatusCode::unsupported,
      "dtype 'F64' is valid safetensors but longrun does not load it", "tensor 'a'");
  add("dtype not a string", make_file(R"({"a":{"dtype":4}})"), F, "a dtype string", "field 'dtype'");
  add("unknown field", make_file(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"foo":1}})", 1), F,
      "unknown field 'foo'", "tensor 'a'");
  add("missing field", make_file(R"({"a":{"dtype":"U8","shape":[1]}})", 1), F, "missing field 'data_offsets'",
      "tensor 'a'");
  add("tensor entry not an object", make_file(R"({"a":[0,1]})"), F, "expected an object", "tensor 'a'");
  add("metadata non-string value", make_file(R"({"__metadata__":{"format":1}})"), F,
      "metadata values must be strings", "key 'format'");
  add("metadata null value", make_file(R"({"__metadata__":{"format":null}})"), F, "must be strings");
  add("metadata not an object", make_file(R"({"__metadata__":"pt"})"), F, "object of string values");
  add("empty name", make_file(obj({entry("", "F32", "[4]", 0, 16)}), 16), F, "tensor name is empty");
  add("name over 1024 bytes", make_file(obj({entry(std::string(1025, 'n'), "U8", "[0]", 0, 0)})), F,
      "is 1025 bytes; expected at most 1024");
  add("filler tensor with a wrong size", make_file(obj({entry("__pad.0", "U8", "[3]", 0, 4)}), 4), F,
      "needs 3 bytes", "tensor '__pad.0'");
  return c;
}

}  // namespace

TEST_CASE("safetensors: malformed files fail with the expected code and message") {
  for (const BadCase& bc : bad_cases()) {
    CAPTURE(bc.what);
    // Exact-size heap copy so ASan catches any read past the end.
    const std::vector<std::byte> bytes = bc.bytes;
    const auto r = SafetensorsFile::parse(bytes, nullptr, kLabel);
    REQUIRE_FALSE(r.ok());
    const std::string msg = r.status().to_string();
    CAPTURE(msg);
    CHECK(r.status().code() == bc.code);
    CHECK(msg.find(bc.needle) != std::string::npos);
    CHECK(msg.find(bc.needle2) != std::string::npos);
    CHECK(msg.find(std::string("'") + kLabel + "'") != std::string::npos);
  }
}

TEST_CASE("safetensors: valid edge cases are accepted") {
  SUBCASE("zero-sized tensors, scalar, and offsets listed out of order") {
    const std::string h = obj(
        {entry("b", "F32", "[2]", 4, 12), entry("z", "F32", "[0, 3]", 4, 4), entry("s", "F32", "[]", 0, 4),
         entry("e", "I64", "[281474976710655, 0]", 12, 12), entry("flag", "BOOL", "[4]", 12, 16)});
    const auto bytes = make_file(h, 16);
    const auto r = parse_bytes(bytes);
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    const auto& f = **r;
    REQUIRE(f.tensors().size() == 5);
    // File order: by (begin, end); equal ranges keep header order.
    CHECK(f.tensors()[0].name == "s");
    CHECK(f.tensors()[1].name == "z");
    CHECK(f.tensors()[2].name == "b");
    CHECK(f.tensors()[3].name == "e");
    CHECK(f.tensors()[4].name == "flag");
    CHECK(f.find("s")->desc.rank() == 0);
    CHECK(f.find("s")->desc.numel() == 1);
    CHECK(f.find("z")->bytes.size() == 0);
    CHECK(f.find("z")->desc.numel() == 0);
    CHECK(f.find("e")->desc.dim(0) == 281474976710655);
    CHECK(f.find("flag")->desc.dtype() == DType::u8);
    CHECK(f.find("b")->desc == TensorDesc(DType::f32, {2}));
    CHECK(f.find("b")->data_begin == 4);
    CHECK(f.find("b")->data_end == 12);
    CHECK(f.find("b")->bytes.data() == bytes.data() + 8 + h.size() + 4);
    CHECK(f.find("missing") == nullptr);
    CHECK(f.file_size() == bytes.size());
    CHECK(f.path() == kLabel);
    CHECK(f.metadata().empty());
  }
  SUBCASE("whitespace around the header, metadata, escaped names") {
    const std::string h = " \t\r\n" +
                          obj({R"("__metadata__":{"format":"pt","cfg":"{\"a\":\"\u00e9\"}"})",
                               entry("a\\u00e9\\ud83d\\ude00\\n", "U8", "[1]", 0, 1)}) +
                          "  \n ";
    const auto r = parse_bytes(make_file(h, 1));
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK((*r)->metadata().at("format") == "pt");
    CHECK((*r)->metadata().at("cfg") == "{\"a\":\"\xc3\xa9\"}");
    REQUIRE((*r)->tensors().size() == 1);
    CHECK((*r)->tensors()[0].name == "a\xc3\xa9\xf0\x9f\x98\x80\n");
  }
  SUBCASE("empty header object, no data") {
    const auto r = parse_bytes(make_file("{}"));
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    CHECK((*r)->tensors().empty());
  }
  SUBCASE("__pad tensors are validated but not listed") {
    const auto r =
        parse_bytes(make_file(obj({entry("a", "U8", "[3]", 0, 3), entry("__pad.0", "U8", "[61]", 3, 64),
                                   entry("b", "F32", "[1]", 64, 68)}),
                              68));
    REQUIRE_MESSAGE(r.ok(), r.status().to_string());
    REQUIRE((*r)->tensors().size() == 2);
    CHECK((*r)->tensors()[1].name == "b");
    CHECK((*r)->find("__pad.0") == nullptr);
  }
}

TEST_CASE("safetensors: corrupting or truncating a valid file never crashes") {
  std::vector<std::byte> data(24 + 10 + 64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 7);
  const std::vector<SafetensorsWriteEntry> entries = {
      {"w", TensorDesc(DType::f32, {2, 3}), std::span(data).subspan(0, 24)},
      {"h", TensorDesc(DType::f16, {5}), std::span(data).subspan(24, 10)},
      {"m", TensorDesc(DType::u8, {8, 8}), std::span(data).subspan(34, 64)}};
  const auto good = serialize_safetensors(entries, {{"k", "v"}});
  REQUIRE(good.ok());
  REQUIRE(parse_bytes(*good).ok());
  int accepted = 0;
  for (size_t len = 0; len < good->size(); ++len) {  // every strict prefix fails
    const std::vector<std::byte> cut(good->begin(), good->begin() + std::ptrdiff_t(len));
    CHECK_FALSE(parse_bytes(cut).ok());
  }
  for (size_t i = 0; i < good->size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<std::byte> b = *good;
      b[i] ^= std::byte(1u << bit);
      const auto r = parse_bytes(b);
      if (!r.ok()) {
        CHECK_FALSE(r.status().message().empty());
        continue;
      }
      ++accepted;  // e.g. a flipped data byte or metadata character: still a valid file
      for (const auto& e : (*r)->tensors()) {
        REQUIRE(e.bytes.data() >= b.data());
        REQUIRE(e.bytes.data() + e.bytes.size() <= b.data() + b.size());
        REQUIRE(uint64_t(e.desc.nbytes()) == e.bytes.size());
      }
    }
  }
  CHECK(accepted > 0);
}

TEST_CASE("safetensors: open reports missing files, directories, FIFOs and empty files") {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/longrun-st-open-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const fs::path dir = tmpl;

  const std::string missing = (dir / "missing.safetensors").string();
  auto r = SafetensorsFile::open(missing);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::not_found);
  CHECK(r.status().message().find(missing) != std::string::npos);

  r = SafetensorsFile::open(dir.string());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::io_error);
  CHECK(r.status().message().find("is a directory") != std::string::npos);

  const std::string fifo = (dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  r = SafetensorsFile::open(fifo);  // must not block waiting for a writer
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::io_error);
  CHECK(r.status().message().find("not a regular file") != std::string::npos);

  const std::string empty = (dir / "empty.safetensors").string();
  std::ofstream(empty).close();
  r = SafetensorsFile::open(empty);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::format_error);
  CHECK(r.status().message().find(empty) != std::string::npos);
  CHECK(r.status().message().find("at least 8") != std::string::npos);

  const std::string bad = (dir / "bad.safetensors").string();
  const auto bytes = make_file("{}", 3);
  std::ofstream(bad, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  r = SafetensorsFile::open(bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::format_error);
  CHECK(r.status().message().find(bad) != std::string::npos);
  CHECK(r.status().message().find("3 trailing bytes") != std::string::npos);

  fs::remove_all(dir);
}
