// Line plots (sa::plot::lines): series as lines and/or points on linear or
// log axes, reference lines with their labels, the legend in a free spot.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sa::plot {

using namespace detail;

namespace {

// How a series is drawn (Series::Style).
const char* style_clause(Series::Style st) {
  switch (st) {
    case Series::Style::Lines: return "with lines lw 2.2";
    case Series::Style::Points: return "with points pt 7 ps 1.1";
    case Series::Style::Dashed: return "with lines lw 2.2 dt (9,6)";
    case Series::Style::LinesPoints: break;
  }
  return "with linespoints lw 2.2 pt 7 ps 1.0";
}

// An axis's title, marked when the axis is logarithmic (unless it says so
// already): on a log axis equal steps are equal factors, which a reader
// must know before reading a slope.
std::string axis_title(const std::string& title, bool log) {
  if (!log || title.find("log scale") != std::string::npos) return title;
  return title.empty() ? "(log scale)" : title + " (log scale)";
}

}  // namespace

std::string lines(const std::string& png_path, const LinePlot& p, int width, int height) {
  if (p.series.empty()) bad_input("lines", "no series");
  for (std::size_t k = 0; k < p.series.size(); ++k) {
    const Series& se = p.series[k];
    validate_series("lines", se, k, true);
    for (std::size_t i = 0; i < se.x.size(); ++i) {
      if (p.logx && std::isfinite(se.x[i]) && se.x[i] <= 0) {
        bad_input("lines", fmt::format("log x axis but series '{}' has x = {}", se.name, se.x[i]));
      }
      if (p.logy && std::isfinite(se.y[i]) && se.y[i] <= 0) {
        bad_input("lines", fmt::format("log y axis but series '{}' has y = {}", se.name, se.y[i]));
      }
    }
  }
  if (p.logy && ((p.ymin && *p.ymin <= 0) || (p.ymax && *p.ymax <= 0))) {
    bad_input("lines", "log y axis with ymin/ymax <= 0");
  }
  if ((p.ymin && !std::isfinite(*p.ymin)) || (p.ymax && !std::isfinite(*p.ymax))) {
    bad_input("lines", "ymin and ymax must be finite");
  }
  if (p.ymin && p.ymax && !(*p.ymin < *p.ymax)) bad_input("lines", "ymin must be below ymax");
  validate_hlines("lines", p.hlines, p.logy);
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& se : p.series) {
    for (std::size_t i = 0; i < se.x.size(); ++i) {
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i])) continue;
      x0 = std::min(x0, se.x[i]), x1 = std::max(x1, se.x[i]);
      y0 = std::min(y0, se.y[i]), y1 = std::max(y1, se.y[i]);
    }
  }
  if (!(x0 <= x1)) bad_input("lines", "no point has a finite x and y");
  check_size("lines", width, height);
  if (!available()) return skipped();

  // The ranges: ymin/ymax where given, else the data's ends (hlines
  // included, so they are drawn) with a little air -- 3% of the width, 5%
  // of the height -- so no point sits on the border. Log axes get the same
  // air as a factor; their tics stay at the data values (see log_tics).
  for (const RefLine& h : p.hlines) y0 = std::min(y0, h.y), y1 = std::max(y1, h.y);
  const Axis xa = padded_axis(x0, x1, p.logx, 0.03);
  const Axis ya = padded_axis(y0, y1, p.logy, 0.05, p.ymin, p.ymax);
  const Frame frame = chart_frame(width, height, !p.title.empty(), !p.xlabel.empty());

  std::string s = kChartStyle;
  s += title_command(p.title, width - 90.0, 15, 11);
  s += "set xlabel " + gq(axis_title(p.xlabel, p.logx)) + "\nset ylabel " + gq(axis_title(p.ylabel, p.logy)) + "\n";
  if (p.logx) {
    const std::string tics = power_of_two_tics(p.series);
    s += "set logscale x\nset xtics " + (tics.empty() ? log_tics(xa) : tics) + "\n";
  }
  if (p.logy) s += "set logscale y\nset ytics " + log_tics(ya) + "\n";
  // gnuplot writes a linear axis's labels with 6 significant digits: on a
  // range far narrower than its values (a loss from 4.14314 to 4.14318,
  // chapter 9's one-iteration run) several tics read the same. Enough
  // digits, then, for a tenth of the range.
  if (!p.logy && ya.hi > ya.lo) {
    const double largest = std::max(std::abs(ya.lo), std::abs(ya.hi));
    const int digits = static_cast<int>(std::ceil(std::log10(largest / ((ya.hi - ya.lo) / 10)))) + 1;
    if (digits > 6) s += fmt::format("set format y '%.{}g'\n", digits);
  }
  // x values that are all whole numbers (epochs, iterations, heads) over a
  // short range: gnuplot would put tics between them (1.2, 1.4, ... over
  // two epochs), at values no point can have. One tic a whole number.
  const bool whole_x = std::ranges::all_of(p.series, [](const Series& se) {
    return std::ranges::all_of(se.x, [](double x) { return !std::isfinite(x) || x == std::round(x); });
  });
  if (!p.logx && whole_x && x1 - x0 < 10) s += "set xtics 1\n";
  s += "set xrange " + xa.range() + "\nset yrange " + ya.range() + "\n";

  // What the legend and the hline labels must not cover.
  Occupancy occ;
  for (const auto& se : p.series) occupy_series(occ, se, xa, ya);

  // Reference lines: all lines first, so no label lands on another line.
  std::vector<std::pair<const RefLine*, double>> shown;  // line, graph height
  for (const RefLine& h : p.hlines) {
    const double v = ya.frac(h.y);
    if (v < -1e-9 || v > 1 + 1e-9) continue;  // outside a given ymin..ymax
    shown.emplace_back(&h, v);
    occ.segment(0, v, 1, v);
  }
  if (!shown.empty()) s += kTextboxStyle;
  int tag = 1;
  for (auto [h, v] : shown) {
    if (h->label.empty()) continue;
    const LabelSpot spot = place_refline_label(occ, h->label, h->y, v, frame);
    occ.box(spot.box);
    s += fmt::format("set label {} {} {} {}\n", tag++, gq(h->label, false), spot.at, kRefLabelStyle);
  }

  // The legend, judged on the range actually drawn (so ymin/ymax headroom
  // counts).
  std::vector<std::string> names;
  for (const auto& se : p.series) {
    if (!se.name.empty()) names.push_back(se.name);
  }
  s += names.empty() ? std::string("unset key\n") : "set key " + key_place(occ, frame, key_size(names)) + "\n";

  // Reference lines first, so the data is drawn over them.
  std::string plot = "plot ";
  for (auto [h, v] : shown) plot += refline_clause(h->y) + ", \\\n     ";
  for (std::size_t k = 0; k < p.series.size(); ++k) {
    const Series& se = p.series[k];
    std::string data;
    for (std::size_t i = 0; i < se.x.size(); ++i) data += num(se.x[i]) + " " + num(se.y[i]) + "\n";
    const std::string block = fmt::format("$series{}", k);
    datablock(s, block, data);
    // A line through one point draws nothing, though its legend entry
    // shows (a theory line at a single d_k, one checkpoint of a curve): its
    // point is marked, in the series' colour and dash.
    std::size_t points = 0;
    for (std::size_t i = 0; i < se.x.size(); ++i) points += std::isfinite(se.x[i]) && std::isfinite(se.y[i]);
    const bool lone = points == 1 && (se.style == Series::Style::Lines || se.style == Series::Style::Dashed);
    std::string style = style_clause(lone ? Series::Style::LinesPoints : se.style);
    if (lone && se.style == Series::Style::Dashed) style += " dt (9,6)";
    plot += fmt::format("{}{} using 1:2 {} lc rgb '{}' {}", k ? ", \\\n     " : "", block, style,
                        cycle_colour(k), title_clause(se.name));
  }
  s += plot + "\n";
  return render("lines", png_path, width, height, s);
}

}  // namespace sa::plot
