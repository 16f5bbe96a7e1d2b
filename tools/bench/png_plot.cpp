#include "png_plot.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "plot_axes.h"
#include "png_writer.h"
#include "raster.h"

namespace longrun::bench {
namespace {

constexpr int kWidth = 1200, kHeight = 680, kScale = 2;            // text is the 5 x 7 font doubled
constexpr int kLeft = 120, kRight = 420, kTop = 70, kBottom = 90;  // margins; the legend is right
constexpr Rgb kWhite{255, 255, 255}, kInk{40, 40, 40}, kGrey{136, 136, 136}, kGrid{215, 215, 215},
    kMinorGrid{236, 236, 236};

std::string fmt(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::vector<uint8_t> png_line_plot(const PlotText& text, const std::vector<PlotSeries>& series) {
  const PlotAxes axes = plot_axes(series);
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + axes.x.frac(x) * pw; };
  auto py = [&](double y) { return kTop + (1.0 - axes.y.frac(y)) * ph; };
  Canvas c(kWidth, kHeight, kWhite);
  const int th = Canvas::text_height(kScale);

  c.text(kLeft + int(pw / 2), 24, text.title, kInk, kScale, Canvas::Align::center);
  // Grid and ticks: every power of two on x; every decade (2x and 5x minor lines) on y.
  for (double e = axes.x.lo; e <= axes.x.hi + 1e-9; e += 1) {
    const double x = px(std::pow(2.0, e));
    c.line(x, kTop, x, kTop + ph, kGrid);
    c.text(int(std::lround(x)), kTop + int(ph) + 12, fmt("%.0f", std::pow(2.0, e)), kInk, kScale,
           Canvas::Align::center);
  }
  for (double e = axes.y.lo; e <= axes.y.hi + 1e-9; e += 1)
    for (const double m : {1.0, 2.0, 5.0}) {
      if (e == axes.y.hi && m > 1) break;
      const double v = m * std::pow(10.0, e), y = py(v);
      c.line(kLeft, y, kLeft + pw, y, m == 1 ? kGrid : kMinorGrid);
      c.text(kLeft - 10, int(std::lround(y)) - th / 2, fmt("%g", v), m == 1 ? kInk : kGrey,
             m == 1 ? kScale : 1, Canvas::Align::right);
    }
  c.line(kLeft, kTop, kLeft + pw, kTop, kInk);
  c.line(kLeft, kTop + ph, kLeft + pw, kTop + ph, kInk);
  c.line(kLeft, kTop, kLeft, kTop + ph, kInk);
  c.line(kLeft + pw, kTop, kLeft + pw, kTop + ph, kInk);
  c.text(kLeft + int(pw / 2), kHeight - 36, text.x_label, kInk, kScale, Canvas::Align::center);
  c.text_up(24, kTop + int(ph / 2), text.y_label, kInk, kScale);

  for (size_t i = 0; i < series.size(); ++i) {
    const Rgb color = parse_hex_color(plot_color(i));
    const auto pts = drawable_points(series[i]);
    for (size_t k = 1; k < pts.size(); ++k)
      c.line(px(pts[k - 1].first), py(pts[k - 1].second), px(pts[k].first), py(pts[k].second), color, 2.5);
    for (const auto& [x, y] : pts) c.disc(px(x), py(y), 4.0, color);
    const int step = std::min(26, int(ph) / std::max(1, int(series.size())));  // many series: packed closer
    const int ly = kTop + 12 + step * int(i), lx = kLeft + int(pw) + 20;
    c.line(lx, ly, lx + 28, ly, color, 2.5);
    c.text(lx + 36, ly - th / 2, series[i].label, kInk, kScale);
  }
  return encode_png_rgb(c.width(), c.height(), c.rgb());
}

Status write_png_line_plot(const std::string& path, const PlotText& text,
                           const std::vector<PlotSeries>& series) {
  const std::vector<uint8_t> png = png_line_plot(text, series);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return io_error("--plot " + path + ": cannot open for writing: " + std::strerror(errno));
  f.write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size()));
  f.close();
  if (!f) return io_error("--plot " + path + ": write failed");
  return Status::ok_status();
}

}  // namespace longrun::bench
