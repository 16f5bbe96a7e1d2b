// A self-contained SVG line plot (no plotting library): one polyline with markers per
// series, log2 x axis (sequence lengths), log10 y axis (milliseconds), grid, tick labels and
// a legend. Used by `longrun-bench models --plot FILE.svg`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "longrun/status.h"

namespace longrun::bench {

struct PlotSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), both > 0; drawn in x order
};

struct PlotText {
  std::string title, x_label, y_label;
};

// The SVG document. Series without points are listed in the legend only.
std::string svg_line_plot(const PlotText& text, const std::vector<PlotSeries>& series);
// Writes it to `path` (io_error naming the file when that fails).
Status write_svg_line_plot(const std::string& path, const PlotText& text,
                           const std::vector<PlotSeries>& series);

}  // namespace longrun::bench
