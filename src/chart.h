// Memory over a swept flag as a picture: a terminal chart and an SVG file from the same data.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace gpuplan::cli {

struct ChartSeries {
  std::string name;
  std::vector<double> bytes;  // one per point
  std::size_t style = 0;      // colour/glyph index: a component keeps its colour whatever else is drawn
};

// A device's usable memory (or an engine's KV pool there) as a limit line, and the last point at or under it.
struct ChartLimit {
  std::string name;
  double bytes = 0;
  std::vector<std::size_t> last_fits;   // the last point that fits, per line (index into all points)
  std::vector<std::string> notes;       // legend lines, e.g. the exact largest value
  std::string what = "usable";          // what the line is: a device's usable memory, or an engine's KV pool
};

// One swept flag: `stack` holds the components per point (stacked, bottom first). Two swept flags: `lines` holds
// each value of the second flag's total per point of the first, and `stack` is empty.
struct Chart {
  std::string title;
  std::string x_name;   // short, for the terminal (the flag)
  std::string x_label;  // the axis title (flag and what it counts)
  std::vector<std::string> x;  // tick labels, one per point
  std::vector<ChartSeries> stack;
  std::vector<ChartSeries> lines;
  std::vector<ChartLimit> limits;
};

// Horizontal bars, one row per point, `width` columns for the largest value; colour when `colour`.
void render_chart_text(const Chart& chart, bool colour, std::ostream& out, int width = 56);
// A standalone SVG document (no scripts, no external resources).
std::string render_chart_svg(const Chart& chart);

}  // namespace gpuplan::cli
