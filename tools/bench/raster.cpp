#include "raster.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "bitmap_font.h"

namespace longrun::bench {
namespace {

constexpr int kCellW = 6;  // 5-pixel glyph plus a column of spacing

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// g, j, p, q, y fit their tails inside the 7 rows; drawn 2 rows lower they hang below the
// baseline as in print (and 'g' no longer reads as '9').
int descent(char c) { return c == 'g' || c == 'j' || c == 'p' || c == 'q' || c == 'y' ? 2 : 0; }

}  // namespace

Rgb parse_hex_color(const char* hex) {
  if (hex == nullptr || hex[0] != '#' || std::strlen(hex) != 7) return {};
  uint8_t v[3];
  for (int i = 0; i < 3; ++i) {
    const int hi = hex_digit(hex[1 + 2 * i]), lo = hex_digit(hex[2 + 2 * i]);
    if (hi < 0 || lo < 0) return {};
    v[i] = uint8_t(hi * 16 + lo);
  }
  return {v[0], v[1], v[2]};
}

Canvas::Canvas(int width, int height, Rgb background)
    : width_(std::max(1, width)), height_(std::max(1, height)), rgb_(size_t(width_) * size_t(height_) * 3) {
  for (size_t i = 0; i < rgb_.size(); i += 3) {
    rgb_[i] = background.r;
    rgb_[i + 1] = background.g;
    rgb_[i + 2] = background.b;
  }
}

void Canvas::blend(int x, int y, Rgb c, double alpha) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_ || !(alpha > 0)) return;
  const double a = std::min(1.0, alpha);
  uint8_t* p = &rgb_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
  p[0] = uint8_t(std::lround(p[0] * (1 - a) + c.r * a));
  p[1] = uint8_t(std::lround(p[1] * (1 - a) + c.g * a));
  p[2] = uint8_t(std::lround(p[2] * (1 - a) + c.b * a));
}

void Canvas::fill_rect(int x0, int y0, int x1, int y1, Rgb c) {
  for (int y = std::max(0, std::min(y0, y1)); y <= std::min(height_ - 1, std::max(y0, y1)); ++y)
    for (int x = std::max(0, std::min(x0, x1)); x <= std::min(width_ - 1, std::max(x0, x1)); ++x)
      blend(x, y, c);
}

// Coverage of each pixel centre by the segment thickened to `width`: 1 inside, falling
// linearly to 0 over one pixel at the edge (cheap anti-aliasing).
void Canvas::line(double x0, double y0, double x1, double y1, Rgb c, double width) {
  const double half = width / 2.0;
  const int xa = int(std::floor(std::min(x0, x1) - half - 1)),
            xb = int(std::ceil(std::max(x0, x1) + half + 1));
  const int ya = int(std::floor(std::min(y0, y1) - half - 1)),
            yb = int(std::ceil(std::max(y0, y1) + half + 1));
  const double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
  for (int y = std::max(0, ya); y <= std::min(height_ - 1, yb); ++y)
    for (int x = std::max(0, xa); x <= std::min(width_ - 1, xb); ++x) {
      const double px = x + 0.5, py = y + 0.5;
      const double t = len2 > 0 ? std::clamp(((px - x0) * dx + (py - y0) * dy) / len2, 0.0, 1.0) : 0.0;
      const double ex = px - (x0 + t * dx), ey = py - (y0 + t * dy);
      const double cover = half + 0.5 - std::sqrt(ex * ex + ey * ey);
      if (cover > 0) blend(x, y, c, cover);
    }
}

void Canvas::disc(double cx, double cy, double radius, Rgb c) {
  for (int y = int(std::floor(cy - radius - 1)); y <= int(std::ceil(cy + radius + 1)); ++y)
    for (int x = int(std::floor(cx - radius - 1)); x <= int(std::ceil(cx + radius + 1)); ++x) {
      const double d = std::hypot(x + 0.5 - cx, y + 0.5 - cy);
      const double cover = radius + 0.5 - d;
      if (cover > 0) blend(x, y, c, cover);
    }
}

int Canvas::text_width(const std::string& s, int scale) {
  return s.empty() ? 0 : (int(s.size()) * kCellW - 1) * scale;
}
int Canvas::text_height(int scale) { return 7 * scale; }

void Canvas::text(int x, int y, const std::string& s, Rgb c, int scale, Align align) {
  const int w = text_width(s, scale);
  int left = align == Align::left ? x : align == Align::center ? x - w / 2 : x - w;
  for (const char ch : s) {
    const auto& g = glyph_5x7(ch);
    const int top = y + descent(ch) * scale;
    for (int row = 0; row < 7; ++row)
      for (int col = 0; col < 5; ++col)
        if (g[size_t(row)] & (0x10 >> col))
          fill_rect(left + col * scale, top + row * scale, left + (col + 1) * scale - 1,
                    top + (row + 1) * scale - 1, c);
    left += kCellW * scale;
  }
}

void Canvas::text_up(int x, int y, const std::string& s, Rgb c, int scale) {
  // Glyph pixel (col, row) of the horizontal layout goes to (left + row, bottom - col): the
  // text reads bottom to top.
  const int w = text_width(s, scale);
  const int bottom = y + w / 2, left = x - text_height(scale) / 2;
  int along = 0;
  for (const char ch : s) {
    const auto& g = glyph_5x7(ch);
    for (int row = 0; row < 7; ++row)
      for (int col = 0; col < 5; ++col)
        if (g[size_t(row)] & (0x10 >> col)) {
          const int px = left + (row + descent(ch)) * scale, py = bottom - along - (col + 1) * scale + 1;
          fill_rect(px, py, px + scale - 1, py + scale - 1, c);
        }
    along += kCellW * scale;
  }
}

}  // namespace longrun::bench
