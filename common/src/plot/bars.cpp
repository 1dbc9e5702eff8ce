// Bar charts (sa::plot::bars): groups of bars per category with their
// values written on top, and reference lines labelled at the right.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sa::plot {

using namespace detail;

std::string bars(const std::string& png_path, const BarChart& c, int width, int height) {
  if (c.categories.empty()) bad_input("bars", "no categories");
  if (c.groups.empty()) bad_input("bars", "no groups");
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    if (c.groups[g].values.size() != c.categories.size()) {
      bad_input("bars", fmt::format("group '{}' has {} values for {} categories", c.groups[g].name,
                                    c.groups[g].values.size(), c.categories.size()));
    }
  }
  validate_hlines("bars", c.hlines, false);
  check_size("bars", width, height);
  if (!available()) return skipped();

  const std::size_t ncat = c.categories.size(), ngroup = c.groups.size();
  // Bars are drawn as boxes at positions we compute (rather than gnuplot's
  // histogram style) so the value labels can be placed on top of each bar.
  const double cluster = 0.8, bar_w = cluster / static_cast<double>(ngroup);
  auto bar_x = [&](std::size_t cat, std::size_t g) {
    return static_cast<double>(cat) - cluster / 2 + bar_w * (static_cast<double>(g) + 0.5);
  };
  double lo = 0, hi = 0;
  for (const auto& g : c.groups) {
    for (double v : g.values) {
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  for (const RefLine& h : c.hlines) lo = std::min(lo, h.y), hi = std::max(hi, h.y);
  if (lo == hi) hi = 1;
  const double span = hi - lo;
  // Room above (and below) the bars for the value labels.
  const Axis ya = {lo < 0 ? lo - 0.12 * span : 0.0, hi > 0 ? hi + 0.12 * span : 0.0, false};
  const Frame frame = chart_frame(width, height, !c.title.empty(), false);

  // Reference-line labels go at the right end of their line, which runs
  // through the bars; so the x range is widened on the right by just enough
  // empty space for the longest label (extra, in category units).
  double label_px = 0;
  for (const RefLine& h : c.hlines) {
    if (!h.label.empty()) label_px = std::max(label_px, text_px(text_width(h.label), kRefLabelPt) + 20);
  }
  label_px = std::min(label_px, 0.5 * frame.w);  // a very long label may reach over the last bars
  const double shown_units = static_cast<double>(ncat) + 0.2;  // -0.6 .. ncat - 0.4
  const double extra = label_px > 0 ? label_px * shown_units / (frame.w - label_px) : 0.0;

  std::string s = kChartStyle;
  s += "set grid noxtics ytics\n";
  s += title_command(c.title, width - 90.0, 15, 11);
  s += "set ylabel " + gq(c.ylabel) + "\n";
  // Category labels are rotated when they would touch their neighbours
  // (12 pt, mostly digits in "d_k=1024"; 12 px of gap).
  const double slot_px = frame.w / (shown_units + extra);
  s += fmt::format("set xtics {} scale 0 font ',12'", tic_list(c.categories, ncat, 60));
  s += text_px(longest(c.categories), 12, true) + 12 > slot_px ? " rotate by 30 right\n" : " norotate\n";
  s += fmt::format("set xrange [-0.6:{}]\n", num(static_cast<double>(ncat) - 0.4 + extra));
  s += "set yrange " + ya.range() + "\n";
  if (lo < 0) s += "set xzeroaxis lt -1 lw 1\n";
  // Legend under the axis: in the top margin it would sit above the title,
  // and inside the plot it would cover the tallest bars.
  s += "set key bmargin center horizontal noopaque nobox\n";

  if (!c.hlines.empty()) s += kTextboxStyle;
  for (std::size_t k = 0; k < c.hlines.size(); ++k) {
    const RefLine& h = c.hlines[k];
    const int tag = static_cast<int>(k) + 1;
    if (h.label.empty()) continue;
    // Above the line, or below it when the line runs along the top.
    const double v = ya.frac(h.y);
    const LabelSpot spot = refline_label_spot(h.label, h.y, v, frame, true, v + 24 / frame.h <= 1);
    // Tags from 1000 on: the value labels below count from 1.
    s += fmt::format("set label {} {} {} {}\n", 1000 + tag, gq(h.label, false), spot.at, kRefLabelStyle);
  }
  s += "set style fill solid 0.9 border lc rgb '#303030'\n";

  const bool value_labels = ncat * ngroup <= 40;
  // Value labels share one number of decimals (0.50 next to 1.00, not 0.5
  // next to 1): the fewest, up to 3, that show every value exactly.
  double biggest = 0, smallest = std::numeric_limits<double>::infinity();
  int decimals = 0;
  for (const auto& g : c.groups) {
    for (double v : g.values) {
      if (!std::isfinite(v) || v == 0) continue;
      biggest = std::max(biggest, std::abs(v));
      smallest = std::min(smallest, std::abs(v));
      int k = 0;
      auto exact = [&](int d) {
        const double scaled = v * std::pow(10.0, d);
        return std::abs(scaled - std::round(scaled)) <= 1e-6 * std::pow(10.0, d) * std::max(1.0, std::abs(v));
      };
      while (k < 3 && !exact(k)) ++k;
      decimals = std::max(decimals, k);
    }
  }
  const bool general = biggest >= 1e5 || smallest < 1e-3;
  auto value_text = [&](double v) { return general ? fmt::format("{:.3g}", v) : fmt::format("{:.{}f}", v, decimals); };
  // Value label size: about as wide as its bar (3 px over on each side
  // still clears the neighbouring bar's label), 7 to 10 pt; 10 pt labels
  // on narrow bars ran into each other.
  std::size_t label_chars = 1;
  for (const auto& g : c.groups) {
    for (double v : g.values) {
      if (std::isfinite(v)) label_chars = std::max(label_chars, value_text(v).size());
    }
  }
  const double bar_px = slot_px * bar_w * 0.95;
  const double value_pt = std::clamp(10.0 * (bar_px + 6) / text_px(label_chars, 10, true), 7.0, 10.0);
  // Where a reference line passes through a value label (which sits 4 to
  // 20 px beyond the end of its bar), the label gets an opaque box (the
  // textbox style set with the lines) to keep it readable.
  auto crossed = [&](double v) {
    const double at = ya.frac(v) * frame.h;
    return std::any_of(c.hlines.begin(), c.hlines.end(), [&](const RefLine& h) {
      const double d = (ya.frac(h.y) * frame.h - at) * (v >= 0 ? 1 : -1);
      return d > 1 && d < 23;
    });
  };
  int tag = 1;
  std::string plot = "plot ";
  for (std::size_t g = 0; g < ngroup; ++g) {
    std::string data;
    for (std::size_t i = 0; i < ncat; ++i) {
      const double v = c.groups[g].values[i];
      data += fmt::format("{} {}\n", num(bar_x(i, g)), num(v));
      if (value_labels && std::isfinite(v)) {
        s += fmt::format("set label {} {} at {},{} center offset 0,{} font ',{:.3g}' tc rgb '#303030' front{}\n",
                         tag++, gq(value_text(v)), num(bar_x(i, g)), num(v), v >= 0 ? 0.7 : -0.7, value_pt,
                         crossed(v) ? " boxed" : "");
      }
    }
    const std::string block = fmt::format("$bars{}", g);
    datablock(s, block, data);
    plot += fmt::format("{}{} using 1:2:({}) with boxes lc rgb '{}' {}", g ? ", \\\n     " : "", block,
                        num(bar_w * 0.95), cycle_colour(g), title_clause(c.groups[g].name));
  }
  // Reference lines last: over the bars, under the (front) value labels.
  for (const RefLine& h : c.hlines) plot += ", \\\n     " + refline_clause(h.y);
  s += plot + "\n";
  return render("bars", png_path, width, height, s);
}

}  // namespace sa::plot
