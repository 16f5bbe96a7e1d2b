// A minimal PNG encoder for longrun-bench's plots (no compression library: the runtime and
// the tools add no dependency for a picture). 8-bit RGB, no interlace, filter 0 on every row;
// the zlib stream uses deflate "stored" blocks (RFC 1951 §3.2.4), so the file is about as
// large as the raw pixels -- a 1100 x 660 plot is ~2 MiB, which is fine for a README figure.
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

// The PNG file of a width x height image given as rows of RGB bytes, top row first
// (rgb.size() must be width * height * 3; an empty vector otherwise).
std::vector<uint8_t> encode_png_rgb(int width, int height, std::span<const uint8_t> rgb);

}  // namespace longrun::bench
