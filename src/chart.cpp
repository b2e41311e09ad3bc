// Terminal and SVG charts of a sweep (see chart.h).
#include "chart.h"

#include <algorithm>
#include <cmath>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include "format_units.h"

namespace gpuplan::cli {

namespace {

constexpr double gib_bytes = 1073741824.0;

// Okabe–Ito, a palette told apart with every common colour-vision deficiency; grey last for slack and context.
const std::vector<const char*> fill_colours = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
                                               "#D55E00", "#F0E442", "#7F7F7F", "#BBBBBB"};
const std::vector<const char*> limit_colours = {"#C00000", "#6A3D9A", "#000000", "#8C564B"};
// The same order as text: distinct glyphs without colour, ANSI colours with it.
const std::vector<const char*> glyphs = {"█", "▓", "▒", "░", "▚", "▞", "▄", "·", ":"};
const std::vector<const char*> ansi = {"34", "33", "32", "35", "36", "31", "93", "90", "37"};

template <class T>
const T& cycle(const std::vector<T>& v, std::size_t i) {
  return v[i % v.size()];
}

double largest_value(const Chart& c) {
  double top = 0;
  for (std::size_t i = 0; i < c.x.size(); ++i) {
    double sum = 0;
    for (const auto& s : c.stack) sum += s.bytes[i];
    top = std::max(top, sum);
    for (const auto& l : c.lines) top = std::max(top, l.bytes[i]);
  }
  for (const auto& l : c.limits) top = std::max(top, l.bytes);
  return top > 0 ? top : 1;
}

// 1, 2 or 5 × 10^k at or above v/5: five gridlines or so.
double nice_step(double v) {
  const double raw = v / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '&') out += "&amp;";
    else if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '"') out += "&quot;";
    else out += ch;
  }
  return out;
}

// Bars of one row: `segments` (value, style index) left to right, limit columns drawn over them.
std::string bar_row(const std::vector<std::pair<double, std::size_t>>& segments, const std::vector<int>& limit_cols,
                    double per_col, int width, bool colour) {
  std::vector<std::size_t> cell(static_cast<std::size_t>(width) + 1, SIZE_MAX);
  double cum = 0;
  int from = 0;
  for (const auto& [v, style] : segments) {
    cum += v;
    const int to = std::min(width, static_cast<int>(std::lround(cum / per_col)));
    for (int c = from; c < to; ++c) cell[static_cast<std::size_t>(c)] = style;
    from = std::max(from, to);
  }
  std::string row;
  for (int c = 0; c <= width; ++c) {
    const std::size_t style = cell[static_cast<std::size_t>(c)];
    const auto lim = std::find(limit_cols.begin(), limit_cols.end(), c);
    if (lim != limit_cols.end()) {
      const std::string mark = std::to_string(1 + (lim - limit_cols.begin()) % 9);
      row += colour ? "\033[1;91m" + mark + "\033[0m" : mark;
    } else if (style == SIZE_MAX) {
      row += ' ';
    } else {
      row += colour ? std::string("\033[") + cycle(ansi, style) + "m█\033[0m" : std::string(cycle(glyphs, style));
    }
  }
  return row;
}

}  // namespace

void render_chart_text(const Chart& chart, bool colour, std::ostream& out, int width) {
  const double per_col = largest_value(chart) / width;
  std::vector<int> limit_cols;
  for (const auto& l : chart.limits) limit_cols.push_back(std::min(width, static_cast<int>(std::lround(l.bytes / per_col))));
  std::size_t label_w = chart.x_name.size();
  for (const auto& x : chart.x) label_w = std::max(label_w, x.size());
  for (const auto& l : chart.lines) label_w = std::max(label_w, l.name.size());
  fmt::print(out, "{}\n", chart.title);
  fmt::print(out, "{:>{}} │ 0{:>{}}\n", chart.x_name, label_w, gib(largest_value(chart)), width);
  auto marks = [&](std::size_t i) {
    std::string m;
    for (const auto& l : chart.limits)
      if (std::find(l.last_fits.begin(), l.last_fits.end(), i) != l.last_fits.end()) m += "  ◀ largest that fits on " + l.name;
    return m;
  };
  if (chart.lines.empty()) {
    for (std::size_t i = 0; i < chart.x.size(); ++i) {
      std::vector<std::pair<double, std::size_t>> seg;
      double total = 0;
      for (std::size_t k = 0; k < chart.stack.size(); ++k) {
        seg.emplace_back(chart.stack[k].bytes[i], chart.stack[k].style);
        total += chart.stack[k].bytes[i];
      }
      fmt::print(out, "{:>{}} │{} {}{}\n", chart.x[i], label_w, bar_row(seg, limit_cols, per_col, width, colour),
                 gib(total), marks(i));
    }
  } else {
    for (std::size_t k = 0; k < chart.lines.size(); ++k) {
      fmt::print(out, "{:>{}} │\n", chart.lines[k].name, label_w);
      for (std::size_t i = 0; i < chart.x.size(); ++i)
        fmt::print(out, "{:>{}} │{} {}{}\n", chart.x[i], label_w,
                   bar_row({{chart.lines[k].bytes[i], chart.lines[k].style}}, limit_cols, per_col, width, colour),
                   gib(chart.lines[k].bytes[i]), marks(k * chart.x.size() + i));
    }
  }
  std::string legend;
  const auto& series = chart.lines.empty() ? chart.stack : chart.lines;
  for (std::size_t k = 0; k < series.size(); ++k)
    legend += (colour ? std::string("\033[") + cycle(ansi, series[k].style) + "m█\033[0m"
                      : std::string(cycle(glyphs, series[k].style))) + " " +
              series[k].name + "  ";
  fmt::print(out, "{}\n", legend);
  for (std::size_t j = 0; j < chart.limits.size(); ++j)
    fmt::print(out, "{} {}: {} {}{}{}\n", 1 + j % 9, chart.limits[j].name, gib(chart.limits[j].bytes), chart.limits[j].what,
               chart.limits[j].notes.empty() ? "" : "; ", fmt::join(chart.limits[j].notes, ", "));
}

std::string render_chart_svg(const Chart& chart) {
  // Layout in SVG user units: plot area inside the margins, legend to the right.
  const double W = 960, H = 480, left = 78, right = 270, top = 48, bottom = 84;
  const double pw = W - left - right, ph = H - top - bottom;
  const double step = nice_step(largest_value(chart) / gib_bytes * 1.05);
  const double y_max = std::ceil(largest_value(chart) / gib_bytes * 1.05 / step) * step;
  auto y = [&](double bytes) { return top + ph - bytes / gib_bytes / y_max * ph; };
  const std::size_t n = chart.x.size();
  const double band = pw / double(std::max<std::size_t>(n, 1));
  auto x_mid = [&](std::size_t i) { return left + band * (double(i) + 0.5); };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      "<text x=\"{2}\" y=\"26\" font-size=\"15\" font-weight=\"bold\">{3}</text>\n",
      W, H, left, xml_escape(chart.title));
  // Grid and y axis in GiB.
  for (double v = 0; v <= y_max + step / 2; v += step) {
    const double yy = y(v * gib_bytes);
    s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e3e3e3\"/>\n"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
                     left, left + pw, yy, left - 8, yy + 4, v);
  }
  s += fmt::format("<text transform=\"translate(22 {:.1f}) rotate(-90)\" text-anchor=\"middle\">memory per GPU (GiB)"
                   "</text>\n", top + ph / 2);
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2, H - 12,
                   xml_escape(chart.x_label));
  // X ticks: at most ~16 labels so they never overlap.
  const std::size_t every = std::max<std::size_t>(1, (n + 15) / 16);
  for (std::size_t i = 0; i < n; i += every)
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x_mid(i), top + ph + 18,
                     xml_escape(chart.x[i]));
  // Stacked bars, or one line per value of the second flag.
  if (chart.lines.empty()) {
    for (std::size_t i = 0; i < n; ++i) {
      double cum = 0;
      for (std::size_t k = 0; k < chart.stack.size(); ++k) {
        const double v = chart.stack[k].bytes[i];
        if (v <= 0) continue;
        s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{} "
                         "{}: {}</title></rect>\n",
                         x_mid(i) - band * 0.36, y(cum + v), band * 0.72, y(cum) - y(cum + v), cycle(fill_colours, chart.stack[k].style),
                         xml_escape(chart.x_label), xml_escape(chart.x[i]), xml_escape(chart.stack[k].name + " " + gib(v)));
        cum += v;
      }
    }
  } else {
    for (std::size_t k = 0; k < chart.lines.size(); ++k) {
      std::string pts;
      for (std::size_t i = 0; i < n; ++i) pts += fmt::format("{:.1f},{:.1f} ", x_mid(i), y(chart.lines[k].bytes[i]));
      s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\"/>\n", pts,
                       cycle(fill_colours, chart.lines[k].style));
      for (std::size_t i = 0; i < n; ++i)
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n", x_mid(i),
                         y(chart.lines[k].bytes[i]), cycle(fill_colours, chart.lines[k].style));
    }
  }
  s += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#333\"/>\n"
                   "<line x1=\"{0}\" x2=\"{3}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#333\"/>\n",
                   left, top, top + ph, left + pw);
  // Each device's usable memory, and a marker over the last point that fits it.
  for (std::size_t j = 0; j < chart.limits.size(); ++j) {
    const auto& l = chart.limits[j];
    const char* colour = cycle(limit_colours, j);
    s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" stroke-width=\"2\" "
                     "stroke-dasharray=\"7 4\"/>\n",
                     left, left + pw, y(l.bytes), colour);
    // Under the x axis: which device the point is the last fit of (a two-flag sweep marks nothing: the legend
    // names the largest values).
    if (!l.last_fits.empty() && chart.lines.empty())
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\" font-weight=\"bold\">"
                       "▲ fits {}</text>\n",
                       x_mid(l.last_fits.front()), top + ph + 36 + 14 * double(j), colour, xml_escape(l.name));
  }
  // Legend: the series, then the limits.
  double ly = top + 4;
  const auto& series = chart.lines.empty() ? chart.stack : chart.lines;
  for (std::size_t k = series.size(); k-- > 0;) {  // top of the stack first, as drawn
    s += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"14\" height=\"14\" fill=\"{}\"/>"
                     "<text x=\"{}\" y=\"{:.1f}\">{}</text>\n",
                     left + pw + 18, ly, cycle(fill_colours, series[k].style), left + pw + 38, ly + 11, xml_escape(series[k].name));
    ly += 20;
  }
  ly += 8;
  for (std::size_t j = 0; j < chart.limits.size(); ++j) {
    const auto& l = chart.limits[j];
    s += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" stroke-width=\"2\" "
                     "stroke-dasharray=\"7 4\"/><text x=\"{4}\" y=\"{5:.1f}\">{6}</text>\n",
                     left + pw + 16, left + pw + 34, ly + 7, cycle(limit_colours, j), left + pw + 38, ly + 11,
                     xml_escape(l.name + ": " + fmt::format("{:.1f} GiB", l.bytes / gib_bytes) + " " + l.what));
    ly += 20;
    for (const auto& note : l.notes) {
      s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#444\">{}</text>\n", left + pw + 38,
                       ly + 6, xml_escape(note));
      ly += 15;
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace gpuplan::cli
