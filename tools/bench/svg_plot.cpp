#include "svg_plot.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "plot_axes.h"

namespace longrun::bench {
namespace {

constexpr double kWidth = 760, kHeight = 460;
constexpr double kLeft = 80, kRight = 230, kTop = 50, kBottom = 60;  // margins; the legend is right

std::string xml(const std::string& s) {
  std::string o;
  for (const char c : s) {
    if (c == '&')
      o += "&amp;";
    else if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

std::string fmt(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string svg_line_plot(const PlotText& text, const std::vector<PlotSeries>& series) {
  const PlotAxes axes = plot_axes(series);
  const LogAxis &ax = axes.x, &ay = axes.y;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + ax.frac(x) * pw; };
  auto py = [&](double y) { return kTop + (1.0 - ay.frac(y)) * ph; };

  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", kWidth) + "\" height=\"" +
       fmt("%.0f", kHeight) + "\" viewBox=\"0 0 " + fmt("%.0f", kWidth) + " " + fmt("%.0f", kHeight) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += "<text x=\"" + fmt("%.1f", kLeft + pw / 2) + "\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">" +
       xml(text.title) + "</text>\n";
  // Grid and ticks: every power of two on x, every decade (and 2x, 5x minor lines) on y.
  for (double e = ax.lo; e <= ax.hi + 1e-9; e += 1) {
    const double x = px(std::pow(2.0, e));
    o += "<line x1=\"" + fmt("%.1f", x) + "\" y1=\"" + fmt("%.1f", kTop) + "\" x2=\"" + fmt("%.1f", x) +
         "\" y2=\"" + fmt("%.1f", kTop + ph) + "\" stroke=\"#ddd\"/>\n";
    o += "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", kTop + ph + 18) +
         "\" text-anchor=\"middle\">" + fmt("%.0f", std::pow(2.0, e)) + "</text>\n";
  }
  for (double e = ay.lo; e <= ay.hi + 1e-9; e += 1) {
    for (const double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (e == ay.hi && m > 1) break;
      const double y = py(v);
      o += "<line x1=\"" + fmt("%.1f", kLeft) + "\" y1=\"" + fmt("%.1f", y) + "\" x2=\"" +
           fmt("%.1f", kLeft + pw) + "\" y2=\"" + fmt("%.1f", y) + "\" stroke=\"" +
           (m == 1 ? "#ccc" : "#eee") + "\"/>\n";
      o += "<text x=\"" + fmt("%.1f", kLeft - 6) + "\" y=\"" + fmt("%.1f", y + 4) + "\" text-anchor=\"end\"" +
           (m == 1 ? "" : " fill=\"#888\" font-size=\"10\"") + ">" + fmt("%g", v) + "</text>\n";
    }
  }
  o += "<rect x=\"" + fmt("%.1f", kLeft) + "\" y=\"" + fmt("%.1f", kTop) + "\" width=\"" + fmt("%.1f", pw) +
       "\" height=\"" + fmt("%.1f", ph) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  o += "<text x=\"" + fmt("%.1f", kLeft + pw / 2) + "\" y=\"" + fmt("%.1f", kHeight - 16) +
       "\" text-anchor=\"middle\">" + xml(text.x_label) + "</text>\n";
  o += "<text transform=\"translate(20 " + fmt("%.1f", kTop + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + xml(text.y_label) + "</text>\n";

  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = plot_color(i);
    const std::vector<std::pair<double, double>> pts = drawable_points(series[i]);
    if (pts.size() >= 2) {
      o += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"2\" points=\"";
      for (const auto& [x, y] : pts) o += fmt("%.1f", px(x)) + "," + fmt("%.1f", py(y)) + " ";
      o += "\"/>\n";
    }
    for (const auto& [x, y] : pts)
      o += "<circle cx=\"" + fmt("%.1f", px(x)) + "\" cy=\"" + fmt("%.1f", py(y)) + "\" r=\"3.5\" fill=\"" +
           color + "\"><title>" + xml(series[i].label) + ": N " + fmt("%.0f", x) + ", " + fmt("%.4g", y) +
           " ms</title></circle>\n";
    const double ly = kTop + 10 + 20 * double(i), lx = kLeft + pw + 16;
    o += "<line x1=\"" + fmt("%.1f", lx) + "\" y1=\"" + fmt("%.1f", ly) + "\" x2=\"" + fmt("%.1f", lx + 22) +
         "\" y2=\"" + fmt("%.1f", ly) + "\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
    o += "<text x=\"" + fmt("%.1f", lx + 28) + "\" y=\"" + fmt("%.1f", ly + 4) + "\">" +
         xml(series[i].label) + "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

Status write_svg_line_plot(const std::string& path, const PlotText& text,
                           const std::vector<PlotSeries>& series) {
  const std::string doc = svg_line_plot(text, series);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return io_error("--plot " + path + ": cannot open for writing: " + std::strerror(errno));
  f.write(doc.data(), std::streamsize(doc.size()));
  f.close();
  if (!f) return io_error("--plot " + path + ": write failed");
  return Status::ok_status();
}

}  // namespace longrun::bench
