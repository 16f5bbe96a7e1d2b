#include "png_writer.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace longrun::bench {
namespace {

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[n] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

// length, type, data, CRC over type + data.
void chunk(std::vector<uint8_t>& out, std::string_view type, std::span<const uint8_t> data) {
  put_be32(out, uint32_t(data.size()));
  const size_t type_at = out.size();
  out.insert(out.end(), type.begin(), type.end());
  out.insert(out.end(), data.begin(), data.end());
  put_be32(out, crc32(std::span<const uint8_t>(out.data() + type_at, out.size() - type_at)));
}

}  // namespace

uint32_t crc32(std::span<const uint8_t> bytes, uint32_t crc) {
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (const uint8_t b : bytes) c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t adler32(std::span<const uint8_t> bytes, uint32_t adler) {
  constexpr uint32_t kMod = 65521;
  uint32_t a = adler & 0xFFFF, b = adler >> 16;
  size_t i = 0;
  while (i < bytes.size()) {
    // 5552 bytes keep the sums below 2^32 before the modulo (zlib's NMAX).
    const size_t end = std::min(bytes.size(), i + 5552);
    for (; i < end; ++i) {
      a += bytes[i];
      b += a;
    }
    a %= kMod;
    b %= kMod;
  }
  return (b << 16) | a;
}

std::vector<uint8_t> zlib_stored(std::span<const uint8_t> data) {
  std::vector<uint8_t> out;
  out.reserve(data.size() + data.size() / 65535 * 5 + 16);
  out.push_back(0x78);  // CMF: deflate, 32 KiB window
  out.push_back(0x01);  // FLG: no dictionary, fastest; (0x78 << 8 | 0x01) % 31 == 0
  size_t at = 0;
  do {
    const size_t len = std::min<size_t>(65535, data.size() - at);
    const bool last = at + len == data.size();
    out.push_back(last ? 1 : 0);  // BFINAL, BTYPE = 00 (stored); the rest of the byte is padding
    out.push_back(uint8_t(len & 0xFF));
    out.push_back(uint8_t(len >> 8));
    out.push_back(uint8_t(~len & 0xFF));
    out.push_back(uint8_t((~len >> 8) & 0xFF));
    out.insert(out.end(), data.begin() + std::ptrdiff_t(at), data.begin() + std::ptrdiff_t(at + len));
    at += len;
  } while (at < data.size());
  put_be32(out, adler32(data));
  return out;
}

std::vector<uint8_t> encode_png_rgb(int width, int height, std::span<const uint8_t> rgb) {
  if (width <= 0 || height <= 0 || rgb.size() != size_t(width) * size_t(height) * 3) return {};
  const size_t row = size_t(width) * 3;
  std::vector<uint8_t> raw;
  raw.reserve((row + 1) * size_t(height));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);  // filter type None
    raw.insert(raw.end(), rgb.begin() + std::ptrdiff_t(row * size_t(y)),
               rgb.begin() + std::ptrdiff_t(row * size_t(y + 1)));
  }
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> ihdr;
  put_be32(ihdr, uint32_t(width));
  put_be32(ihdr, uint32_t(height));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8 bits, RGB, deflate, filter method 0, no interlace
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", zlib_stored(raw));
  chunk(png, "IEND", {});
  return png;
}

}  // namespace longrun::bench
