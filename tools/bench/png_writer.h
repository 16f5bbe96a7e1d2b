// A minimal PNG encoder for longrun-bench's plots (no compression library: the runtime and
// the tools add no dependency for a picture). 8-bit RGB, no interlace, filter 0 on every row;
// the zlib stream is one deflate block with the fixed Huffman codes (RFC 1951 §3.2.6) and
// greedy LZ77 matches: a plot's flat runs and repeated rows shrink a 1180 x 680 plot from
// 2.4 MB of raw pixels to well under 100 KB.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace longrun::bench {

// CRC-32 (ISO-HDLC, reflected polynomial 0xEDB88320) as PNG chunks use; pass the previous
// value to continue over more bytes. crc32("123456789") = 0xCBF43926.
uint32_t crc32(std::span<const uint8_t> bytes, uint32_t crc = 0);
// Adler-32 as the zlib trailer uses; adler32("Wikipedia") = 0x11E60398.
uint32_t adler32(std::span<const uint8_t> bytes, uint32_t adler = 1);

// The zlib stream (RFC 1950) of `data` in stored deflate blocks of at most 65535 bytes.
std::vector<uint8_t> zlib_stored(std::span<const uint8_t> data);

// The zlib stream of `data` as one fixed-Huffman deflate block (greedy LZ77: 3..258-byte
// matches up to 32 KiB back, hash chains of at most 64 candidates).
std::vector<uint8_t> zlib_fixed(std::span<const uint8_t> data);

// The PNG file of a width x height image given as rows of RGB bytes, top row first
// (rgb.size() must be width * height * 3; an empty vector otherwise).
std::vector<uint8_t> encode_png_rgb(int width, int height, std::span<const uint8_t> rgb);

}  // namespace longrun::bench
