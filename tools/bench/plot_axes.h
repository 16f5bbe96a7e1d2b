// The geometry of the `longrun-bench models --plot` SVG (svg_plot.cpp): log axes fitted to
// the data, the drawable points of a series and the series colours.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "svg_plot.h"

namespace longrun::bench {

// A log axis over [vmin, vmax] (vmin > 0) in `base`, padded to whole powers.
struct LogAxis {
  double base = 10, lo = 0, hi = 1;  // exponents
  LogAxis() = default;
  LogAxis(double b, double vmin, double vmax);
  double frac(double v) const;  // 0 at base^lo, 1 at base^hi
};

// x: powers of two (sequence lengths), y: decades (milliseconds); an empty frame when no
// series has a positive finite point.
struct PlotAxes {
  LogAxis x, y;
};
PlotAxes plot_axes(const std::vector<PlotSeries>& series);

// The positive, finite points of a series, sorted by x.
std::vector<std::pair<double, double>> drawable_points(const PlotSeries& s);

// "#rrggbb" of series i (ten colours, repeating).
const char* plot_color(size_t i);

}  // namespace longrun::bench
