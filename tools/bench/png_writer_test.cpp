// Unit tests of longrun-bench's PNG encoder (png_writer.h) and rasteriser (raster.h): known
// CRC-32 / Adler-32 values, the stored and fixed-Huffman zlib streams read back by an
// inflater written here from RFC 1951, every chunk's
// CRC, and -- where Debian's python3 is present -- an independent decode with Python's zlib.
#include "png_writer.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "raster.h"

namespace {

using namespace longrun::bench;

std::span<const uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | b[at + 3];
}

// Inflates a zlib stream made only of stored blocks (what zlib_stored writes).
std::vector<uint8_t> inflate_stored(const std::vector<uint8_t>& z) {
  REQUIRE(z.size() >= 6);
  CHECK(z[0] == 0x78);
  CHECK((z[0] * 256 + z[1]) % 31 == 0);
  std::vector<uint8_t> out;
  size_t at = 2;
  bool last = false;
  while (!last) {
    REQUIRE(at + 5 <= z.size());
    last = z[at] & 1;
    REQUIRE(((z[at] >> 1) & 3) == 0);  // BTYPE stored
    const size_t len = z[at + 1] | size_t(z[at + 2]) << 8, nlen = z[at + 3] | size_t(z[at + 4]) << 8;
    REQUIRE((len ^ 0xFFFF) == nlen);
    at += 5;
    REQUIRE(at + len <= z.size());
    out.insert(out.end(), z.begin() + std::ptrdiff_t(at), z.begin() + std::ptrdiff_t(at + len));
    at += len;
  }
  REQUIRE(at + 4 == z.size());
  CHECK(be32(z, at) == adler32(out));
  return out;
}

// Inflates a zlib stream of stored and fixed-Huffman blocks (what zlib_stored and
// zlib_fixed write), written from RFC 1951 independently of the encoder's tables.
std::vector<uint8_t> inflate_fixed(const std::vector<uint8_t>& z) {
  REQUIRE(z.size() >= 6);
  CHECK((z[0] * 256 + z[1]) % 31 == 0);
  size_t byte = 2;
  int bit = 0;
  auto get = [&]() -> uint32_t {
    REQUIRE(byte < z.size());
    const uint32_t b = (z[byte] >> bit) & 1u;
    if (++bit == 8) bit = 0, ++byte;
    return b;
  };
  auto bits = [&](int count) {  // LSB first
    uint32_t v = 0;
    for (int i = 0; i < count; ++i) v |= get() << i;
    return v;
  };
  auto symbol = [&]() -> int {  // fixed literal/length code, read MSB first
    uint32_t c = 0;
    for (int i = 0; i < 7; ++i) c = c << 1 | get();
    if (c <= 23) return 256 + int(c);
    c = c << 1 | get();
    if (c >= 0x30 && c <= 0xBF) return int(c - 0x30);
    if (c >= 0xC0 && c <= 0xC7) return 280 + int(c - 0xC0);
    c = c << 1 | get();
    REQUIRE(c >= 0x190);
    REQUIRE(c <= 0x1FF);
    return 144 + int(c - 0x190);
  };
  std::vector<uint8_t> out;
  bool last = false;
  while (!last) {
    last = get() == 1;
    const uint32_t type = bits(2);
    REQUIRE(type <= 1);
    if (type == 0) {
      if (bit != 0) bit = 0, ++byte;
      REQUIRE(byte + 4 <= z.size());
      const size_t len = z[byte] | size_t(z[byte + 1]) << 8;
      REQUIRE((len ^ 0xFFFF) == (z[byte + 2] | size_t(z[byte + 3]) << 8));
      byte += 4;
      REQUIRE(byte + len <= z.size());
      out.insert(out.end(), z.begin() + std::ptrdiff_t(byte), z.begin() + std::ptrdiff_t(byte + len));
      byte += len;
      continue;
    }
    for (;;) {
      const int sym = symbol();
      if (sym < 256) {
        out.push_back(uint8_t(sym));
        continue;
      }
      if (sym == 256) break;
      REQUIRE(sym <= 285);
      // Length: codes 257..264 are 3..10; then four codes per extra bit; 285 is 258.
      const int l = sym - 257;
      int length = 0;
      if (l < 8) {
        length = 3 + l;
      } else if (l == 28) {
        length = 258;
      } else {
        const int extra = (l - 4) / 4;
        length = ((4 + (l - 8) % 4) << extra) + 3 + int(bits(extra));
      }
      uint32_t d = 0;
      for (int i = 0; i < 5; ++i) d = d << 1 | get();
      REQUIRE(d <= 29);
      const int dextra = d < 4 ? 0 : int(d / 2 - 1);
      const size_t distance = d < 4 ? d + 1 : ((2 + (d % 2)) << dextra) + 1 + bits(dextra);
      REQUIRE(distance <= out.size());
      for (int i = 0; i < length; ++i) out.push_back(out[out.size() - distance]);
    }
  }
  if (bit != 0) ++byte;
  REQUIRE(byte + 4 == z.size());
  CHECK(be32(z, byte) == adler32(out));
  return out;
}

struct Chunk {
  std::string type;
  std::vector<uint8_t> data;
};

// Splits a PNG file into chunks, checking the signature and every CRC.
std::vector<Chunk> chunks(const std::vector<uint8_t>& png) {
  const std::vector<uint8_t> sig = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  REQUIRE(png.size() >= 8);
  REQUIRE(std::vector<uint8_t>(png.begin(), png.begin() + 8) == sig);
  std::vector<Chunk> out;
  size_t at = 8;
  while (at < png.size()) {
    REQUIRE(at + 12 <= png.size());
    const size_t len = be32(png, at);
    REQUIRE(at + 12 + len <= png.size());
    const std::span<const uint8_t> typed(png.data() + at + 4, 4 + len);
    CHECK(be32(png, at + 8 + len) == crc32(typed));
    out.push_back({std::string(png.begin() + std::ptrdiff_t(at + 4), png.begin() + std::ptrdiff_t(at + 8)),
                   std::vector<uint8_t>(typed.begin() + 4, typed.end())});
    at += 12 + len;
  }
  return out;
}

}  // namespace

TEST_CASE("crc32 and adler32 match their published check values") {
  CHECK(crc32(bytes_of("123456789")) == 0xCBF43926u);
  CHECK(crc32(bytes_of("")) == 0u);
  CHECK(crc32(bytes_of("6789"), crc32(bytes_of("12345"))) == 0xCBF43926u);  // continued
  CHECK(crc32(bytes_of("IEND")) == 0xAE426082u);                            // every PNG's last CRC
  CHECK(adler32(bytes_of("Wikipedia")) == 0x11E60398u);
  CHECK(adler32(bytes_of("")) == 1u);
  std::vector<uint8_t> big(100000, 0xFF);  // past zlib's NMAX: the modulo must keep up
  uint32_t a = 1, b = 0;
  for (const uint8_t v : big) a = (a + v) % 65521, b = (b + a) % 65521;
  CHECK(adler32(big) == (b << 16 | a));
}

TEST_CASE("zlib_stored round-trips through stored blocks of at most 65535 bytes") {
  for (const size_t n : {size_t(0), size_t(1), size_t(65535), size_t(65536), size_t(150000)}) {
    std::vector<uint8_t> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = uint8_t((i * 131 + 7) % 251);
    const std::vector<uint8_t> z = zlib_stored(data);
    CHECK(z.size() == 2 + 5 * std::max<size_t>(1, (n + 65534) / 65535) + n + 4);
    CHECK(inflate_stored(z) == data);
  }
}

TEST_CASE("zlib_fixed round-trips: empty, short, runs, repeats far back, incompressible") {
  std::vector<std::vector<uint8_t>> inputs = {{}, {7}, {1, 2}, std::vector<uint8_t>(100000, 0xAB)};
  std::vector<uint8_t> rows;  // a 3-byte pattern, then rows repeating 20000 bytes back
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 20000; ++x) rows.push_back(uint8_t(x % 3 == 0 ? 255 : (x * y) % 7));
  inputs.push_back(rows);
  std::vector<uint8_t> noise(70000);
  uint32_t state = 12345;
  for (uint8_t& v : noise) v = uint8_t((state = state * 1103515245u + 12345u) >> 24);
  inputs.push_back(noise);
  std::vector<uint8_t> far(40000);  // a 300-byte block repeated 33000 bytes later: beyond the window
  for (size_t i = 0; i < far.size(); ++i)
    far[i] = uint8_t(i < 300 ? i : (i >= 33000 && i < 33300 ? i - 33000 : i % 11));
  inputs.push_back(far);
  for (const std::vector<uint8_t>& data : inputs) {
    CAPTURE(data.size());
    const std::vector<uint8_t> z = zlib_fixed(data);
    CHECK(inflate_fixed(z) == data);
    CHECK(inflate_fixed(zlib_stored(data)) == data);  // the reader takes both block types
  }
  CHECK(zlib_fixed(inputs[3]).size() < 1000);  // 100000 equal bytes
  CHECK(zlib_fixed(rows).size() < rows.size() / 4);
  CHECK(zlib_fixed(noise).size() < noise.size() * 9 / 8 + 16);  // 9-bit literals at worst
}

TEST_CASE("encode_png_rgb writes IHDR, one IDAT of filtered rows and IEND") {
  const int w = 3, h = 2;
  std::vector<uint8_t> rgb(size_t(w * h * 3));
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 10);
  const std::vector<uint8_t> png = encode_png_rgb(w, h, rgb);
  const std::vector<Chunk> c = chunks(png);
  REQUIRE(c.size() == 3);
  CHECK(c[0].type == "IHDR");
  CHECK(c[0].data == std::vector<uint8_t>{0, 0, 0, 3, 0, 0, 0, 2, 8, 2, 0, 0, 0});
  CHECK(c[1].type == "IDAT");
  const std::vector<uint8_t> raw = inflate_fixed(c[1].data);
  std::vector<uint8_t> expected;
  for (int y = 0; y < h; ++y) {
    expected.push_back(0);
    expected.insert(expected.end(), rgb.begin() + y * w * 3, rgb.begin() + (y + 1) * w * 3);
  }
  CHECK(raw == expected);
  CHECK(c[2].type == "IEND");
  CHECK(c[2].data.empty());
  CHECK(encode_png_rgb(2, 2, rgb).empty());  // size mismatch
}

TEST_CASE("Python's zlib decodes the PNG to the same pixels") {
  if (!std::filesystem::exists("/usr/bin/python3")) {
    MESSAGE("no /usr/bin/python3: independent decode skipped");
    return;
  }
  Canvas c(40, 30, {255, 255, 255});
  c.line(2, 2, 37, 27, {200, 30, 30}, 2.0);
  c.text(3, 20, "N=4096", {0, 0, 0});
  const std::vector<uint8_t> png = encode_png_rgb(c.width(), c.height(), c.rgb());
  const auto dir = std::filesystem::temp_directory_path();
  const std::string path = (dir / ("longrun_png_test_" + std::to_string(::getpid()) + ".png")).string();
  const std::string pixels = path + ".rgb";
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size()));
  }
  // Walks the chunks with zlib.crc32, inflates IDAT with zlib.decompress, drops the filter
  // bytes (all 0) and writes the RGB rows.
  const std::string script =
      "import struct,sys,zlib\n"
      "d=open(sys.argv[1],'rb').read(); assert d[:8]==b'\\x89PNG\\r\\n\\x1a\\n'; i=8; idat=b''\n"
      "while i<len(d):\n"
      " n,=struct.unpack('>I',d[i:i+4]); t=d[i+4:i+8]; body=d[i+8:i+8+n]\n"
      " assert struct.unpack('>I',d[i+8+n:i+12+n])[0]==zlib.crc32(t+body)\n"
      " if t==b'IHDR': w,h=struct.unpack('>II',body[:8])\n"
      " if t==b'IDAT': idat+=body\n"
      " i+=12+n\n"
      "raw=zlib.decompress(idat); s=3*w+1; assert len(raw)==s*h\n"
      "assert all(raw[y*s]==0 for y in range(h))\n"
      "open(sys.argv[2],'wb').write(b''.join(raw[y*s+1:(y+1)*s] for y in range(h)))\n";
  const std::string script_path = path + ".py";
  {
    std::ofstream f(script_path);
    f << script;
  }
  const std::string cmd = "/usr/bin/python3 " + script_path + " " + path + " " + pixels;
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream f(pixels, std::ios::binary);
  const std::vector<uint8_t> decoded((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(decoded == c.rgb());
  std::filesystem::remove(path);
  std::filesystem::remove(pixels);
  std::filesystem::remove(script_path);
}

TEST_CASE("the rasteriser draws lines, discs and text where asked") {
  Canvas c(20, 12, {255, 255, 255});
  auto at = [&](int x, int y) { return c.rgb()[size_t((y * 20 + x) * 3)]; };
  c.line(0, 5.5, 20, 5.5, {0, 0, 0}, 1.0);
  CHECK(at(10, 5) == 0);         // on the line
  CHECK(at(10, 9) == 255);       // well off it
  c.text(0, 0, "1", {0, 0, 0});  // '1': row 0 is 0x04, the middle column
  CHECK(at(2, 0) == 0);
  CHECK(at(0, 0) == 255);
  CHECK(Canvas::text_width("ab", 2) == 22);
  c.disc(15, 9, 2, {0, 0, 0});
  CHECK(at(15, 9) == 0);
  CHECK(parse_hex_color("#1f77b4").g == 0x77);
}
