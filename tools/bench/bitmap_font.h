// A 5 x 7 bitmap font for printable ASCII (32..126), drawn for longrun-bench's PNG plots:
// seven rows per glyph, bit 4 the leftmost of the five columns.
#pragma once

#include <array>
#include <cstdint>

namespace longrun::bench {

// The glyph of `c`; '?' for characters outside 32..126.
const std::array<uint8_t, 7>& glyph_5x7(char c);

}  // namespace longrun::bench
