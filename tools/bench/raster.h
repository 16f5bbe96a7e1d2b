// A small RGB raster for longrun-bench's PNG plots: anti-aliased thick lines (coverage from
// the distance to the segment), filled rectangles and discs, and text in a built-in 5 x 7
// bitmap font (printable ASCII; anything else draws as '?'), scaled by whole pixels and
// optionally rotated a quarter turn for a y-axis label.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace longrun::bench {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

// "#1f77b4" -> Rgb (black for anything else).
Rgb parse_hex_color(const char* hex);

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);
  int width() const { return width_; }
  int height() const { return height_; }
  const std::vector<uint8_t>& rgb() const { return rgb_; }  // rows top to bottom, 3 bytes a pixel

  // Mixes `c` into pixel (x, y) with weight alpha in [0, 1]; outside the canvas: nothing.
  void blend(int x, int y, Rgb c, double alpha = 1.0);
  void fill_rect(int x0, int y0, int x1, int y1, Rgb c);  // inclusive corners
  void line(double x0, double y0, double x1, double y1, Rgb c, double width = 1.0);
  void disc(double cx, double cy, double radius, Rgb c);

  enum class Align { left, center, right };
  // Text with its top-left (left), top-centre or top-right corner at (x, y); glyph cells are
  // 6 pixels wide (7 high, g j p q y 2 more) times `scale`.
  void text(int x, int y, const std::string& s, Rgb c, int scale = 1, Align align = Align::left);
  // The same turned 90 degrees counter-clockwise (reads bottom to top), centred on (x, y).
  void text_up(int x, int y, const std::string& s, Rgb c, int scale = 1);
  static int text_width(const std::string& s, int scale = 1);
  static int text_height(int scale = 1);

 private:
  int width_, height_;
  std::vector<uint8_t> rgb_;
};

}  // namespace longrun::bench
