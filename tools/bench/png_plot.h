// The PNG form of the `longrun-bench models --plot` figure (the same content as
// svg_plot.h: log2 N on x, log10 milliseconds on y, grid, ticks, one coloured line with
// markers per series and a legend), rasterised by raster.h and written by png_writer.h.
#pragma once

#include <string>
#include <vector>

#include "longrun/status.h"
#include "svg_plot.h"

namespace longrun::bench {

// The PNG file's bytes.
std::vector<uint8_t> png_line_plot(const PlotText& text, const std::vector<PlotSeries>& series);
// Writes it to `path` (io_error naming the file when that fails).
Status write_png_line_plot(const std::string& path, const PlotText& text,
                           const std::vector<PlotSeries>& series);

}  // namespace longrun::bench
