// What the 2-D charts (lines, bars, histograms) share: their look
// (kChartStyle), checks of their series and reference lines, legend
// entries, the record of what a legend or label could cover, where the
// legend goes, and reference lines with their labels.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace sa::plot::detail {

// Common look of the 2-D charts: light grid behind, axes on two sides.
const char* const kChartStyle =
    "set border 3 lw 1.2 lc rgb '#404040'\n"
    "set tics nomirror out scale 0.6\n"
    // The grid's default linetype 0 is dotted and nearly invisible in PNG.
    "set grid back lt 1 lw 1 lc rgb '#e4e4e4'\n"
    "set title font ',15'\n"
    "set xlabel font ',12'\n"
    "set ylabel font ',12'\n"
    // Legend: line sample first, then the left-aligned name.
    "set key opaque box lc rgb '#bdbdbd' Left reverse samplen 3 spacing 1.25 width 1\n";

// ---- Series --------------------------------------------------------------------

void validate_series(std::string_view fn, const Series& se, std::size_t index, bool need_y) {
  const std::string name = se.name.empty() ? fmt::format("series {}", index) : fmt::format("series '{}'", se.name);
  if (se.x.empty()) bad_input(fn, name + " has no points");
  if (need_y && se.x.size() != se.y.size()) {
    bad_input(fn, fmt::format("{} has {} x values but {} y values", name, se.x.size(), se.y.size()));
  }
}

// RefLine values must be finite (and positive on a log axis).
void validate_hlines(std::string_view fn, const std::vector<RefLine>& hlines, bool logy) {
  for (const RefLine& h : hlines) {
    if (!std::isfinite(h.y)) bad_input(fn, fmt::format("hline '{}' has y = {}", h.label, h.y));
    if (logy && h.y <= 0) bad_input(fn, fmt::format("log y axis but hline '{}' has y = {}", h.label, h.y));
  }
}

std::string title_clause(const std::string& name) { return name.empty() ? "notitle" : "title " + gq(name); }

// ---- Legend and label placement ----------------------------------------------------
//
// What the legend or a label could cover is recorded in graph coordinates:
// data points, line segments (sampled), bars and reference lines. A spot is
// free when nothing recorded falls inside it.

void Occupancy::point(double u, double v) {
  if (u >= 0 && u <= 1 && v >= 0 && v <= 1) pts_.emplace_back(u, v);
}

// A line from (u0, v0) to (u1, v1), sampled every 0.004 of the frame
// (3 px on a 780 px wide plot): a line crossing a corner occupies it even
// where there is no data point. Parts outside the frame are clipped away.
void Occupancy::segment(double u0, double v0, double u1, double v1) {
  if ((u0 < 0 && u1 < 0) || (u0 > 1 && u1 > 1) || (v0 < 0 && v1 < 0) || (v0 > 1 && v1 > 1)) return;
  const double len = std::max(std::abs(u1 - u0), std::abs(v1 - v0));
  const int n = static_cast<int>(std::min(std::ceil(len / 0.004), 2000.0));
  for (int i = 1; i < n; ++i) {
    const double f = static_cast<double>(i) / n;
    point(u0 + f * (u1 - u0), v0 + f * (v1 - v0));
  }
}

void Occupancy::box(const Box& b) { boxes_.push_back(b); }

std::size_t Occupancy::count(const Box& b) const {
  std::size_t n = 0;
  for (auto [u, v] : pts_) n += b.contains(u, v);
  for (const Box& o : boxes_) n += b.overlaps(o) ? 100 : 0;
  return n;
}

// A series as its points and (unless drawn as points only) the line
// segments between them; a NaN breaks the line, as it does in gnuplot.
void occupy_series(Occupancy& occ, const Series& se, const Axis& xa, const Axis& ya) {
  bool have_prev = false;
  double pu = 0, pv = 0;
  for (std::size_t i = 0; i < se.x.size(); ++i) {
    if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i])) {
      have_prev = false;
      continue;
    }
    const double u = xa.frac(se.x[i]), v = ya.frac(se.y[i]);
    occ.point(u, v);
    if (have_prev && se.style != Series::Style::Points) occ.segment(pu, pv, u, v);
    have_prev = true;
    pu = u;
    pv = v;
  }
}

// The legend box as kChartStyle draws it, in pixels: one 21.5 px row per
// entry, and as wide as gnuplot makes it, which counts characters, not
// their widths: the longest name and 7.4 characters more (line sample,
// gaps, box) at 8.9 px a character of 11 pt (measured on the figures, to
// 3 px). Estimated from the text's width instead, it came out short for
// long names (23 px for 54 characters, 4 px for 35), and the opaque
// legend covered half a point that sat just beside it (chapter 7's
// loss.png with --epochs 1).
KeySize key_size(const std::vector<std::string>& names) {
  return {(static_cast<double>(longest(names)) + 7.4) * 8.9, 21.5 * static_cast<double>(names.size()) + 6.0};
}

// Where the legend goes: inside the plot in the first free spot of the
// corners and the middle of the top and bottom edge; when all of them are
// busy, under the plot, centred and laid out in rows, like the bar charts.
// (Outside on the right would shift the plot area left, and gnuplot, which
// centres the title on the plot area, then cuts the title off on the left.)
std::string key_place(const Occupancy& occ, Frame f, KeySize key) {
  // gnuplot leaves about 9 px (x) and 7 px (y) between border and legend;
  // 6 px more keep the legend off point markers (radius about 5 px).
  const double air = 6;
  const double w = (key.w + 9 + air) / f.w, h = (key.h + 7 + air) / f.h, cw = (key.w / 2 + air) / f.w;
  struct Spot {
    const char* where;
    Box box;
  };
  const std::array<Spot, 6> spots = {{{"right top", {1 - w, 1 - h, 1, 1}},
                                      {"left top", {0, 1 - h, w, 1}},
                                      {"right bottom", {1 - w, 0, 1, h}},
                                      {"left bottom", {0, 0, w, h}},
                                      {"center top", {0.5 - cw, 1 - h, 0.5 + cw, 1}},
                                      {"center bottom", {0.5 - cw, 0, 0.5 + cw, h}}}};
  if (w < 1 && h < 1) {
    for (const Spot& s : spots) {
      if (occ.count(s.box) == 0) return std::string("inside ") + s.where;
    }
  }
  // Under the plot gnuplot puts the legend right against the x axis's
  // title ("position" touched the first entry): `height 1` adds a line of
  // room to the legend, half of it above.
  return "bmargin center horizontal noopaque nobox height 1";
}

// Reference lines (RefLine): a dashed grey line across the plot and its
// label in a small opaque white box (so a line passing behind it does not
// strike through the text). The line is a constant function in the plot
// command, not a `set arrow`: gnuplot draws front arrows after the front
// labels, so an arrow would strike through every label, boxed or not,
// while plot elements come before them. Its place in the plot command
// decides what it covers (see lines() and bars()).
std::string refline_clause(double y) {
  return num(y) + " with lines dt (10,6) lw 1.4 lc rgb '#666666' notitle";
}

// The label box of a reference line at height v, in pixels: the text plus
// the textbox margins; it sits 4..22 px above or below the line, and about
// 9 px (one character, the label offset) in from the border.
LabelSpot refline_label_spot(const std::string& label, double y, double v, Frame f, bool right, bool above) {
  const double w = (text_px(text_width(label), kRefLabelPt) + 6) / f.w, in = 9 / f.w;
  const double near = 4 / f.h, far = 22 / f.h;
  const Box box = {right ? 1 - in - w : in, above ? v + near : v - far, right ? 1 - in : in + w,
                   above ? v + far : v - near};
  // Offsets are in character units of the 11 pt default font (about 9 x 17 px).
  return {fmt::format("at graph {}, first {} {} offset {},{}", right ? 1 : 0, num(y), right ? "right" : "left",
                      right ? -1 : 1, above ? 0.75 : -0.75),
          box};
}

// The first free spot for a reference line's label: above the line at the
// right end, below it, then the same at the left end; when all are busy,
// the least busy (the opaque box keeps the text readable).
LabelSpot place_refline_label(const Occupancy& occ, const std::string& label, double y, double v, Frame f) {
  std::optional<LabelSpot> best;
  std::size_t best_count = 0;
  for (bool right : {true, false}) {
    for (bool above : {true, false}) {
      LabelSpot spot = refline_label_spot(label, y, v, f, right, above);
      if (!spot.box.inside_frame()) continue;
      const std::size_t n = occ.count(spot.box);
      if (n == 0) return spot;
      if (!best || n < best_count) best = spot, best_count = n;
    }
  }
  // Nothing fits inside the frame (a label as wide as the plot): above, right.
  return best ? *best : refline_label_spot(label, y, v, f, true, v < 0.9);
}

}  // namespace sa::plot::detail
