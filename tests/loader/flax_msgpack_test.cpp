// Flax msgpack reader: a matrix of hand-made malformed files (each must fail with the expected
// code and a message fragment), truncation at every byte offset of a valid file, and the
// edge cases that must be accepted. Fixture round trips live in flax_golden_test.cpp.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "convert/flax/flax_tree.h"

using namespace longrun;
using namespace longrun::checkpoint;

namespace {

// A tiny msgpack writer for building malformed inputs byte by byte.
struct Mp {
  std::vector<std::byte> b;

  Mp& byte(int v) {
    b.push_back(std::byte(uint8_t(v)));
    return *this;
  }
  Mp& be(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) byte(int((v >> (8 * i)) & 0xff));
    return *this;
  }
  Mp& map(uint64_t n) { return n < 16 ? byte(0x80 | int(n)) : byte(0xdf).be(n, 4); }
  Mp& arr(uint64_t n) { return n < 16 ? byte(0x90 | int(n)) : byte(0xdd).be(n, 4); }
  Mp& str(std::string_view s) {
    if (s.size() < 32)
      byte(0xa0 | int(s.size()));
    else
      byte(0xdb).be(s.size(), 4);
    for (char c : s) byte(c);
    return *this;
  }
  Mp& bin(size_t n) {
    byte(0xc6).be(n, 4);
    for (size_t i = 0; i < n; ++i) byte(int(i));
    return *this;
  }
  Mp& i(int64_t v) { return v >= 0 && v < 128 ? byte(int(v)) : byte(0xd3).be(uint64_t(v), 8); }
  Mp& ext(int type, const Mp& payload) {
    byte(0xc9).be(payload.b.size(), 4).byte(type);
    b.insert(b.end(), payload.b.begin(), payload.b.end());
    return *this;
  }
  Mp& add(const Mp& o) {
    b.insert(b.end(), o.b.begin(), o.b.end());
    return *this;
  }
};

// msgpack [shape, dtype, bin(nbytes)].
Mp nd_payload(std::initializer_list<int64_t> shape, std::string_view dtype, size_t nbytes) {
  Mp p;
  p.arr(3).arr(shape.size());
  for (int64_t d : shape) p.i(d);
  return p.str(dtype).bin(nbytes);
}
Mp ndarray(std::initializer_list<int64_t> shape, std::string_view dtype, size_t nbytes) {
  return Mp().ext(1, nd_payload(shape, dtype, nbytes));
}
// {"params": {"w": value}}
Mp wrap(const Mp& value) { return Mp().map(1).str("params").map(1).str("w").add(value); }

Mp chunked(const Mp& shape_map, const Mp& chunks_map) {
  return Mp()
      .map(3)
      .str("__msgpack_chunked_array__")
      .byte(0xc3)
      .str("shape")
      .add(shape_map)
      .str("chunks")
      .add(chunks_map);
}

struct BadCase {
  std::string what;
  std::vector<std::byte> bytes;
  StatusCode code;
  std::string needle;
  std::string needle2 = "";
};

std::vector<BadCase> bad_cases() {
  std::vector<BadCase> c;
  const auto F = StatusCode::format_error;
  const auto R = StatusCode::out_of_range;
  const auto add = [&](std::string what, const Mp& m, StatusCode code, std::string needle,
                       std::string n2 = "") {
    c.push_back({std::move(what), m.b, code, std::move(needle), std::move(n2)});
  };
  // Framing.
  add("empty input", Mp(), F, "expected a msgpack object, found the end of the input");
  add("top level not a map", Mp().arr(0), F, "expected a map at the top level", "found array");
  add("top-level ndarray", ndarray({2}, "float32", 8), F, "found ext");
  add("trailing bytes", Mp().map(0).byte(0xc0), F, "1 trailing bytes after the top-level map");
  add("reserved byte 0xc1", Mp().map(1).str("a").byte(0xc1), F, "0xc1 is reserved", "key 'a'");
  // Lying lengths.
  add("str32 longer than the input", Mp().map(1).byte(0xdb).be(0xffffffff, 4), F,
      "str declares 4294967295 bytes but only 0 remain");
  add("map32 count beyond the input", Mp().map(1).str("a").byte(0xdf).be(0xffffffff, 4), F,
      "map declares 4294967295 elements but only 0 bytes remain", "key 'a'");
  add("map count that needs 2 bytes per entry", Mp().byte(0x83).str("a").byte(0xc0).byte(0xc0), F,
      "map declares 3 elements but only 4 bytes remain");
  add("ext32 longer than the input", Mp().map(1).str("w").byte(0xc9).be(1000, 4).byte(1), F,
      "ext declares 1000 bytes");
  add("truncated ext header", Mp().map(1).str("w").byte(0xc9).be(0, 2), F, "truncated ext length");
  add("truncated float64", Mp().map(1).str("w").byte(0xcb).be(0, 3), F, "truncated float64");
  add("bin length beyond the payload",
      wrap(Mp().ext(1, Mp().arr(3).arr(1).i(2).str("float32").byte(0xc6).be(9999, 4))), F,
      "bin declares 9999 bytes", "key 'params/w'");
  add("array count beyond the payload", wrap(Mp().ext(1, Mp().arr(3).byte(0xdd).be(1u << 31, 4))), F,
      "array declares 2147483648 elements");
  // Keys.
  add("integer key", Mp().map(1).i(1).byte(0xc0), F,
      "map key is a msgpack int; Flax state dicts have string keys");
  add("bin key", Mp().map(1).bin(1).byte(0xc0), F, "map key is a msgpack bin");
  add("duplicate key", Mp().map(2).str("k").i(1).str("k").i(2), F, "duplicate key 'k'");
  add("duplicate nested key", Mp().map(1).str("params").map(2).str("w").i(1).str("w").i(2), F,
      "duplicate key 'w'", "key 'params'");
  add("invalid UTF-8 key", Mp().map(1).str("a\xff").byte(0xc0), F, "map key is not valid UTF-8");
  add("UTF-8 surrogate in a string", Mp().map(1).str("s").str("\xed\xa0\x80"), F,
      "string value is not valid UTF-8");
  add("key over the byte limit", Mp().map(1).str(std::string(1025, 'k')).byte(0xc0), R,
      "key of 1025 bytes exceeds the limit of 1024");
  // Tree shape.
  add("array in the tree", wrap(Mp().arr(1).i(1)), F, "lists as maps keyed", "key 'params/w'");
  add("bin in the tree", wrap(Mp().bin(4)), F, "raw bin value");
  // Depth bombs and huge counts.
  Mp deep;
  for (int d = 0; d < 100000; ++d) deep.map(1).str("a");
  add("100000 nested maps", deep.byte(0xc0), R, "maps nest deeper than the limit of 64");
  Mp wide = Mp().map(1).str("m").byte(0xdf).be(1u << 21, 4);
  for (uint32_t k = 0; k < (2u << 21); ++k)
    wide.byte(0xc0);  // entries are never read: the count is checked first
  add("map entries over the limit", wide, R, "map declares 2097152 entries; the limit is 1048576");
  // ndarray payloads.
  add("payload not an array", wrap(Mp().ext(1, Mp().i(1))), F, "payload must be a msgpack array",
      "found int");
  add("payload array of 2", wrap(Mp().ext(1, Mp().arr(2).arr(0).str("float32"))), F, "found array of 2");
  add("shape not an array", wrap(Mp().ext(1, Mp().arr(3).i(4).str("float32").bin(16))), F,
      "shape must be an array of integers");
  add("negative dim", wrap(Mp().ext(1, nd_payload({-1}, "float32", 0))), F,
      "shape[0] is not a non-negative integer");
  add("dtype not a string", wrap(Mp().ext(1, Mp().arr(3).arr(0).i(1).bin(4))), F, "dtype must be a string");
  add("unknown dtype", wrap(ndarray({2}, "complex64", 16)), StatusCode::unsupported,
      "dtype 'complex64' is not supported", "key 'params/w'");
  add("byte-order dtype", wrap(ndarray({2}, "<f4", 8)), StatusCode::unsupported, "dtype '<f4'");
  add("data not bin", wrap(Mp().ext(1, Mp().arr(3).arr(0).str("float32").str("abcd"))), F,
      "data must be msgpack bin");
  add("data shorter than the shape", wrap(ndarray({2, 3}, "float32", 20)), F,
      "shape and dtype 'float32' need 24 bytes, data has 20");
  add("data longer than the shape", wrap(ndarray({2}, "bfloat16", 6)), F, "need 4 bytes, data has 6");
  add("trailing bytes in the payload", wrap(Mp().ext(1, nd_payload({1}, "int8", 1).byte(0xc0))), F,
      "1 trailing bytes in the payload");
  add("shape product overflows", wrap(ndarray({1ll << 40, 1ll << 40}, "float32", 0)), StatusCode::overflow,
      "element count or byte size overflows");
  add("byte size overflows", wrap(ndarray({1ll << 31, 1ll << 31}, "float64", 0)), StatusCode::overflow,
      "overflows");
  add("rank over the limit", wrap(ndarray({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, "int8", 1)), R,
      "rank 17 exceeds the limit of 16");
  add("numpy scalar with a shape", wrap(Mp().ext(3, nd_payload({2}, "float32", 8))), F,
      "a numpy scalar must have shape [], found rank 1");
  add("native complex", wrap(Mp().ext(2, Mp().arr(2).i(1).i(2))), StatusCode::unsupported,
      "native complex number (ext type 2)");
  add("unknown ext type", wrap(Mp().ext(7, Mp().i(0))), F, "unknown msgpack ext type 7");
  add("truncated payload", wrap(Mp().ext(1, Mp().arr(3).arr(1))), F,
      "array declares 3 elements but only 1 bytes remain", "in an ndarray (ext type 1) payload");
  // Chunked arrays.
  const Mp shape2 = Mp().map(1).str("0").i(6);
  const Mp two_chunks =
      Mp().map(2).str("0").add(ndarray({4}, "float32", 16)).str("1").add(ndarray({2}, "float32", 8));
  add("chunks hold fewer elements than the shape", wrap(chunked(Mp().map(1).str("0").i(7), two_chunks)), F,
      "chunks hold 6 elements but the shape needs 7", "key 'params/w'");
  add("chunks hold more elements than the shape", wrap(chunked(Mp().map(1).str("0").i(5), two_chunks)), F,
      "chunks hold 6 elements but the shape needs 5");
  add("chunk dtypes differ",
      wrap(chunked(
          shape2,
          Mp().map(2).str("0").add(ndarray({4}, "float32", 16)).str("1").add(ndarray({2}, "int32", 8)))),
      F, "chunk 1 has dtype 'int32' but chunk 0 has 'float32'");
  add("chunk not flat", wrap(chunked(shape2, Mp().map(1).str("0").add(ndarray({2, 3}, "float32", 24)))), F,
      "chunk 0 has rank 2, expected a flat (rank-1) array");
  add("chunk not an ndarray", wrap(chunked(shape2, Mp().map(1).str("0").i(1))), F,
      "chunk 0 is not an ndarray");
  add("chunk keys with a gap", wrap(chunked(shape2, Mp().map(1).str("1").add(ndarray({6}, "float32", 24)))),
      F, "'chunks' keys must be \"0\"..\"0\", found '1'");
  add("shape key with a leading zero", wrap(chunked(Mp().map(1).str("00").i(6), two_chunks)), F,
      "found '00'");
  add("negative chunked dim", wrap(chunked(Mp().map(1).str("0").i(-6), two_chunks)), F,
      "shape[0] is not a non-negative integer");
  add("no chunks", wrap(chunked(Mp().map(1).str("0").i(0), Mp().map(0))), F, "'chunks' is empty");
  add("missing shape",
      wrap(Mp().map(2).str("__msgpack_chunked_array__").byte(0xc3).str("chunks").add(two_chunks)), F,
      "missing 'shape' map");
  add("marker false",
      wrap(Mp().map(3)
               .str("__msgpack_chunked_array__")
               .byte(0xc2)
               .str("shape")
               .add(shape2)
               .str("chunks")
               .add(two_chunks)),
      F, "'__msgpack_chunked_array__' must be true");
  add("extra key",
      wrap(Mp().map(4)
               .str("__msgpack_chunked_array__")
               .byte(0xc3)
               .str("shape")
               .add(shape2)
               .str("chunks")
               .add(two_chunks)
               .str("dtype")
               .i(1)),
      F, "unexpected key 'dtype'");
  add("chunked shape overflows",
      wrap(chunked(Mp().map(2).str("0").i(1ll << 40).str("1").i(1ll << 40), two_chunks)),
      StatusCode::overflow, "element count overflows");
  return c;
}

std::vector<std::byte> read_fixture(const std::string& name) {
  std::ifstream f(std::string(LONGRUN_GOLDEN_DIR) + "/flax/" + name, std::ios::binary);
  REQUIRE(f.good());
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

}  // namespace

TEST_CASE("flax msgpack: malformed files fail with the expected code and message") {
  const auto cases = bad_cases();
  CHECK(cases.size() >= 55);
  for (const BadCase& bc : cases) {
    CAPTURE(bc.what);
    const std::vector<std::byte> bytes = bc.bytes;  // exact-size heap copy for ASan
    const auto r = read_flax_msgpack(bytes, {}, "bad.msgpack");
    REQUIRE_FALSE(r.ok());
    const std::string msg = r.status().to_string();
    CAPTURE(msg);
    CHECK(r.status().code() == bc.code);
    CHECK(msg.find(bc.needle) != std::string::npos);
    CHECK(msg.find(bc.needle2) != std::string::npos);
    CHECK(msg.find("bad.msgpack: at byte ") != std::string::npos);
  }
}

TEST_CASE("flax msgpack: truncation at every byte offset of a valid file fails cleanly") {
  for (const char* name : {"hf_bert_tiny.msgpack", "chunked.msgpack", "combiner_tree.msgpack"}) {
    const std::vector<std::byte> full = read_fixture(name);
    REQUIRE(read_flax_msgpack(full).ok());
    for (size_t n = 0; n < full.size(); ++n) {
      const std::vector<std::byte> cut(full.begin(), full.begin() + std::ptrdiff_t(n));
      const auto r = read_flax_msgpack(cut, {}, name);
      CAPTURE(n);
      REQUIRE_FALSE(r.ok());
      const std::string& m = r.status().message();
      CAPTURE(m);
      CHECK(r.status().code() == StatusCode::format_error);
      CHECK((m.find("truncated") != std::string::npos || m.find("remain") != std::string::npos));
    }
  }
}

TEST_CASE("flax msgpack: limits can be lowered") {
  const std::vector<std::byte> full = read_fixture("combiner_tree.msgpack");
  FlaxLimits depth;
  depth.max_depth = 3;
  auto r = read_flax_msgpack(full, depth);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("nest deeper than the limit of 3") != std::string::npos);
  FlaxLimits nodes;
  nodes.max_nodes = 10;
  r = read_flax_msgpack(full, nodes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("more than 10 nodes") != std::string::npos);
  FlaxLimits chunk;
  chunk.max_chunked_bytes = 100;
  r = read_flax_msgpack(read_fixture("chunked.msgpack"), chunk);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("140 bytes exceed the limit of 100") != std::string::npos);
  CHECK(r.status().message().find("key 'params/big/kernel'") != std::string::npos);
}

TEST_CASE("flax msgpack: accepted edge cases") {
  // Every integer and float width, nil, empty maps, a zero-size array, an unaligned array
  // (copied), an empty key at parse time (refused only by flatten).
  Mp ok;
  ok.map(8).str("u8").byte(0xcc).byte(200).str("i16").byte(0xd1).be(uint64_t(-300) & 0xffff, 2);
  ok.str("neg").byte(0xff).str("f32").byte(0xca).be(0x3fc00000, 4).str("nil").byte(0xc0);
  ok.str("e").map(0).str("z").add(ndarray({0, 4}, "float32", 0));
  ok.str("x").add(ndarray({3}, "int16", 6));
  const auto r = read_flax_msgpack(ok.b);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  const FlaxDict& d = r->root;
  CHECK(d.find("u8")->scalar()->i == 200);
  CHECK(d.find("i16")->scalar()->i == -300);
  CHECK(d.find("neg")->scalar()->i == -1);
  CHECK(d.find("f32")->scalar()->f == 1.5);
  CHECK(d.find("nil")->scalar()->kind == FlaxScalar::Kind::none);
  CHECK(d.find("e")->dict()->keys.empty());
  CHECK(d.find("z")->tensor()->shape == std::vector<int64_t>{0, 4});
  const FlaxTensor& x = *d.find("x")->tensor();
  CHECK(x.bytes.size() == 6);
  CHECK(reinterpret_cast<uintptr_t>(x.bytes.data()) % 2 == 0);
  // The same bytes shifted by one: the int16 data lands at the other parity, and is copied
  // exactly when unaligned.
  std::vector<std::byte> shifted(ok.b.size() + 1);
  std::memcpy(shifted.data() + 1, ok.b.data(), ok.b.size());
  const auto s = read_flax_msgpack(std::span<const std::byte>(shifted).subspan(1));
  REQUIRE(s.ok());
  const FlaxTensor& y = *s->root.find("x")->tensor();
  CHECK(reinterpret_cast<uintptr_t>(y.bytes.data()) % 2 == 0);
  CHECK(y.zero_copy() != x.zero_copy());
  CHECK(std::memcmp(x.bytes.data(), y.bytes.data(), 6) == 0);
  // ext8 with an empty payload is refused, not read past.
  const auto bad = read_flax_msgpack(Mp().map(1).str("odd").byte(0xc7).byte(0).byte(1).b);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("found the end of the input") != std::string::npos);
}

TEST_CASE("flax msgpack: flatten refuses keys that make paths ambiguous") {
  for (const char* key : {"a/b", ""}) {
    const auto r = read_flax_msgpack(Mp().map(1).str("params").map(1).str(key).i(1).b);
    REQUIRE(r.ok());
    const auto f = flatten_flax_tree(*r);
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().message().find("cannot be part of a '/'-joined path") != std::string::npos);
    CHECK(f.status().message().find("under 'params'") != std::string::npos);
  }
}
