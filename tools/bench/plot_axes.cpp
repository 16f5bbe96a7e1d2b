#include "plot_axes.h"

#include <algorithm>
#include <cmath>

namespace longrun::bench {

LogAxis::LogAxis(double b, double vmin, double vmax) : base(b) {
  lo = std::floor(std::log(vmin) / std::log(b));
  hi = std::ceil(std::log(vmax) / std::log(b));
  if (hi <= lo) hi = lo + 1;
}

double LogAxis::frac(double v) const { return (std::log(v) / std::log(base) - lo) / (hi - lo); }

std::vector<std::pair<double, double>> drawable_points(const PlotSeries& s) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& p : s.points)
    if (p.first > 0 && p.second > 0 && std::isfinite(p.first) && std::isfinite(p.second)) pts.push_back(p);
  std::sort(pts.begin(), pts.end());
  return pts;
}

PlotAxes plot_axes(const std::vector<PlotSeries>& series) {
  double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = 0;
  for (const PlotSeries& s : series)
    for (const auto& [x, y] : drawable_points(s)) {
      xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  if (!(xmax > 0)) xmin = 1, xmax = 2, ymin = 1, ymax = 10;  // nothing to draw: an empty frame
  return {LogAxis(2.0, xmin, xmax), LogAxis(10.0, ymin, ymax)};
}

const char* plot_color(size_t i) {
  static constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kColors[i % std::size(kColors)];
}

}  // namespace longrun::bench
