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

namespace {

// Bits into bytes, least significant bit first (RFC 1951 §3.1.1).
class BitWriter {
 public:
  explicit BitWriter(std::vector<uint8_t>& out) : out_(out) {}
  void bits(uint32_t value, int count) {  // the low `count` bits of value, LSB first
    acc_ |= uint64_t(value) << used_;
    used_ += count;
    while (used_ >= 8) {
      out_.push_back(uint8_t(acc_));
      acc_ >>= 8;
      used_ -= 8;
    }
  }
  void huffman(uint32_t code, int length) {  // Huffman codes go most significant bit first
    uint32_t reversed = 0;
    for (int i = 0; i < length; ++i) reversed |= ((code >> i) & 1u) << (length - 1 - i);
    bits(reversed, length);
  }
  void flush() {
    if (used_ > 0) out_.push_back(uint8_t(acc_));
    acc_ = 0;
    used_ = 0;
  }

 private:
  std::vector<uint8_t>& out_;
  uint64_t acc_ = 0;
  int used_ = 0;
};

// The fixed literal/length code (RFC 1951 §3.2.6).
void fixed_symbol(BitWriter& w, int sym) {
  if (sym < 144)
    w.huffman(0x30 + uint32_t(sym), 8);
  else if (sym < 256)
    w.huffman(0x190 + uint32_t(sym - 144), 9);
  else if (sym < 280)
    w.huffman(uint32_t(sym - 256), 7);
  else
    w.huffman(0xC0 + uint32_t(sym - 280), 8);
}

constexpr int kLengthBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr int kLengthExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                  2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr int kDistBase[30] = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,
                               33,   49,   65,   97,   129,  193,  257,  385,   513,   769,
                               1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr int kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

void fixed_match(BitWriter& w, int length, int distance) {
  int l = 28;
  while (kLengthBase[l] > length) --l;
  fixed_symbol(w, 257 + l);
  w.bits(uint32_t(length - kLengthBase[l]), kLengthExtra[l]);
  int d = 29;
  while (kDistBase[d] > distance) --d;
  w.huffman(uint32_t(d), 5);
  w.bits(uint32_t(distance - kDistBase[d]), kDistExtra[d]);
}

}  // namespace

std::vector<uint8_t> zlib_fixed(std::span<const uint8_t> data) {
  constexpr int kMinMatch = 3, kMaxMatch = 258, kWindow = 32768, kHashBits = 15, kMaxChain = 64;
  std::vector<uint8_t> out = {0x78, 0x01};  // as zlib_stored
  BitWriter w(out);
  w.bits(1, 1);  // BFINAL: one block
  w.bits(1, 2);  // BTYPE = 01, fixed Huffman codes
  const size_t n = data.size();
  // head[h]: the latest position + 1 whose next 3 bytes hash to h; prev[p % window]: the one
  // before it with the same hash (0: none). Greedy matching along that chain.
  std::vector<uint32_t> head(size_t(1) << kHashBits, 0), prev(kWindow, 0);
  auto hash = [&](size_t i) {
    const uint32_t v = uint32_t(data[i]) | uint32_t(data[i + 1]) << 8 | uint32_t(data[i + 2]) << 16;
    return (v * 2654435761u) >> (32 - kHashBits);
  };
  auto insert = [&](size_t i) {
    if (i + kMinMatch > n) return;
    const uint32_t h = hash(i);
    prev[i % kWindow] = head[h];
    head[h] = uint32_t(i + 1);
  };
  size_t i = 0;
  while (i < n) {
    int best = 0;
    size_t best_at = 0;
    if (i + kMinMatch <= n) {
      const size_t limit = std::min<size_t>(kMaxMatch, n - i);
      uint32_t cand = head[hash(i)];
      for (int chain = 0; cand != 0 && chain < kMaxChain; ++chain) {
        const size_t at = cand - 1;
        if (i - at > size_t(kWindow - 1)) break;
        size_t len = 0;
        while (len < limit && data[at + len] == data[i + len]) ++len;
        if (int(len) > best) best = int(len), best_at = at;
        if (len == limit) break;
        const uint32_t next = prev[at % kWindow];
        if (next == 0 || next - 1 >= at) break;  // older entries only (a slot may be reused)
        cand = next;
      }
    }
    if (best >= kMinMatch) {
      fixed_match(w, best, int(i - best_at));
      for (size_t k = 0; k < size_t(best); ++k) insert(i + k);
      i += size_t(best);
    } else {
      fixed_symbol(w, data[i]);
      insert(i);
      ++i;
    }
  }
  fixed_symbol(w, 256);  // end of block
  w.flush();
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
  chunk(png, "IDAT", zlib_fixed(raw));
  chunk(png, "IEND", {});
  return png;
}

}  // namespace longrun::bench
