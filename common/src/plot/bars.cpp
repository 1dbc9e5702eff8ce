// Bar charts (sa::plot::bars): groups of bars per category with their
// values written on top, and reference lines labelled at the right; and
// such charts side by side, each on its own axis (bars_row).

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace sa::plot {

using namespace detail;

namespace {

void validate(std::string_view fn, const BarChart& c, const std::string& where = "") {
  if (c.categories.empty()) bad_input(fn, where + "no categories");
  if (c.groups.empty()) bad_input(fn, where + "no groups");
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    if (c.groups[g].values.size() != c.categories.size()) {
      bad_input(fn, fmt::format("{}group '{}' has {} values for {} categories", where, c.groups[g].name,
                                c.groups[g].values.size(), c.categories.size()));
    }
  }
  validate_hlines(fn, c.hlines, false);
}

// Emits one bar chart into s: a whole figure, or a panel of a row whose
// left edge is `left_px` from the canvas's (canvas_w x canvas_h; the panel
// stands on its bottom edge). width x height is the chart's size; id keeps
// its datablocks apart from other panels'; title_pt is the size of its
// title (smaller under a row's).
void bar_panel(std::string& s, const BarChart& c, int width, int height, double left_px, int canvas_w,
               int canvas_h, std::size_t id, double title_pt) {
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
  Frame frame = chart_frame(width, height, !c.title.empty(), false);

  // Reference-line labels go at the right end of their line, which runs
  // through the bars; so the x range is widened on the right by just enough
  // empty space for the longest label (extra, in category units).
  double ref_label_px = 0;
  for (const RefLine& h : c.hlines) {
    if (!h.label.empty()) ref_label_px = std::max(ref_label_px, text_px(text_width(h.label), kRefLabelPt) + 20);
  }
  const double shown_units = static_cast<double>(ncat) + 0.2;  // -0.6 .. ncat - 0.4
  double extra = 0;
  // The width of one category on the plot, for the plot's width then.
  auto slot_for = [&](const Frame& f) {
    const double ref = std::min(ref_label_px, 0.5 * f.w);  // a very long label may reach over the last bars
    extra = ref > 0 ? ref * shown_units / (f.w - ref) : 0.0;
    return f.w / (shown_units + extra);
  };
  double slot_px = slot_for(frame);

  s += "unset label\nset lmargin\nset bmargin\n";  // what an earlier panel set
  s += "set grid noxtics ytics\n";
  s += title_command(c.title, width - 90.0, title_pt, 11);
  s += "set ylabel " + gq(c.ylabel) + "\n";
  // Category labels of more than 24 characters are shortened in the
  // middle: one of 64 letters, turned, took half the canvas and squeezed
  // the bars into a corner.
  std::vector<std::string> labels;
  for (const std::string& l : c.categories) labels.push_back(shorten(l, 24));
  // Category labels are rotated when they would touch their neighbours
  // (12 pt, mostly digits in "d_k=1024"; 12 px of gap).
  const bool rotated = text_px(longest(labels), 12, true) + 12 > slot_px;
  // Turned by 30 degrees, neighbouring labels are slot * sin 30 apart
  // across their lines: every stride-th is shown so that this is a line of
  // 12 pt text (64 words' labels ran into each other).
  auto stride_for = [&] {
    return rotated ? static_cast<std::size_t>(std::ceil(1.2 * 12 * kPxPerPt / (0.5 * slot_px))) : std::size_t(1);
  };
  std::size_t stride = stride_for();
  // A turned label runs down to the left from its bar, so the first ones
  // can reach past the y axis's labels and off the canvas ("nationalization
  // (0)"). Then the left margin is widened to hold them and the plot is
  // narrowed (which moves the first bars left again: a few rounds).
  if (rotated) {
    const double default_left = width - 30.0 - frame.w;  // chart_frame's estimate of gnuplot's margin
    double left = default_left;
    for (int round = 0; round < 4; ++round) {
      double reach = 0;  // px left of the plot's left border, 10 px of air included
      for (std::size_t i = 0; i < ncat; i += stride) {
        const double w = label_px(labels[i], 12);
        reach = std::max(reach, 0.866 * w + 0.25 * 12 * kPxPerPt + 10 - (static_cast<double>(i) + 0.6) * slot_px);
      }
      if (reach <= left) break;
      frame.w -= reach - left;
      left = reach;
      slot_px = slot_for(frame);
      stride = stride_for();
    }
    if (left > default_left) s += fmt::format("set lmargin at screen {:.5f}\n", (left_px + left) / canvas_w);
  }
  std::string tics;
  for (std::size_t i = 0; i < ncat; i += stride) tics += fmt::format("{}{} {}", i ? ", " : "", gq(labels[i], false), i);
  s += fmt::format("set xtics ({}) scale 0 font ',12'", tics);
  s += rotated ? " rotate by 30 right\n" : " norotate\n";
  s += fmt::format("set xrange [-0.6:{}]\n", num(static_cast<double>(ncat) - 0.4 + extra));
  s += "set yrange " + ya.range() + "\n";
  if (lo < 0) s += "set xzeroaxis lt -1 lw 1\n";
  // Legend under the axis: in the top margin it would sit above the title,
  // and inside the plot it would cover the tallest bars. Groups without a
  // name (one group, named by the title) need none.
  const bool named = std::any_of(c.groups.begin(), c.groups.end(), [](const BarGroup& g) { return !g.name.empty(); });
  s += named ? "set key bmargin center horizontal noopaque nobox\n" : "unset key\n";
  // gnuplot underestimates how far turned labels reach down, and set the
  // legend across the ends of the longest (chapter 2's "d_k=1024" ran into
  // "softmax(q . k / sqrt(d_k))" under it). So the bottom margin is measured
  // here (at most half the chart, for the plot to keep its room): the
  // labels' reach (w sin 30 + a line's height cos 30, under a gap of about
  // 6 px), 8 px of air, and the legend's rows, which gnuplot sets at the
  // canvas's bottom edge. Its entries share a row while they fit across the
  // chart's width in columns as wide as gnuplot makes them: the longest
  // name and 7.4 characters more (sample and gaps), at 8.9 px a character
  // of the 11 pt legend (measured on its figures).
  if (rotated) {
    double drop = 0;
    for (std::size_t i = 0; i < ncat; i += stride)
      drop = std::max(drop, 0.5 * label_px(labels[i], 12) + 0.866 * 12 * kPxPerPt);
    double bottom = 6 + drop + 8;
    if (named) {
      std::size_t chars = 0;
      for (const BarGroup& g : c.groups) chars = std::max(chars, text_width(g.name));
      const double column = (static_cast<double>(chars) + 7.4) * 8.9;
      const double per_row = std::max(1.0, std::floor(width / column));
      bottom += 21.5 * std::ceil(static_cast<double>(ngroup) / per_row) + 8;
    }
    bottom = std::min(bottom, 0.5 * height);
    s += fmt::format("set bmargin at screen {:.5f}\n", bottom / canvas_h);
    frame.h = std::max(height - (c.title.empty() ? 25.0 : 57.0) - bottom, 50.0);  // as chart_frame, with this margin
  }

  if (!c.hlines.empty()) s += kTextboxStyle;
  // Each label at the right end of its line: above it, or below it when
  // the line runs along the top or when above it would cross another line
  // or an earlier label (chapter 7's "chance" at 7.1% and "every head" at
  // 7.0%, a model still guessing, had their labels one on the other).
  Occupancy occ;
  for (const RefLine& h : c.hlines) occ.segment(0, ya.frac(h.y), 1, ya.frac(h.y));
  for (std::size_t k = 0; k < c.hlines.size(); ++k) {
    const RefLine& h = c.hlines[k];
    const int tag = static_cast<int>(k) + 1;
    if (h.label.empty()) continue;
    const double v = ya.frac(h.y);
    std::optional<LabelSpot> spot;
    for (bool above : {true, false}) {
      const LabelSpot at = refline_label_spot(h.label, h.y, v, frame, true, above);
      if (at.box.inside_frame() && occ.count(at.box) == 0) {
        spot = at;
        break;
      }
    }
    if (!spot) spot = refline_label_spot(h.label, h.y, v, frame, true, v + 24 / frame.h <= 1);
    occ.box(spot->box);
    // Tags from 1000 on: the value labels below count from 1.
    s += fmt::format("set label {} {} {} {}\n", 1000 + tag, gq(h.label, false), spot->at, kRefLabelStyle);
  }
  s += "set style fill solid 0.9 border lc rgb '#303030'\n";

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
  // Where a value label sits: 4 to 20 px beyond the end of its bar, or,
  // when a reference line passes through that band, as far beyond the
  // line. An opaque box around the label still let the dashes touch its
  // digits, and a bar ending just under the line (an entropy of 1.777
  // under log 6 = 1.792) had its label cut through: moved past the line,
  // the label stays over its bar, readable, and the line runs unbroken.
  // Lines close together are passed one after the other. A line up to 26
  // px beyond the bar counts, not only up to 20: the plot's height is an
  // estimate, and a label 2 px under a line looked crossed by it.
  auto label_at = [&](double v) {
    const double sign = v >= 0 ? 1 : -1;
    double at = v;
    for (bool moved = true; moved;) {
      moved = false;
      for (const RefLine& h : c.hlines) {
        const double d = (ya.frac(h.y) - ya.frac(at)) * frame.h * sign;
        if (d > 1 && d < 26) at = h.y, moved = true;
      }
    }
    return at;
  };
  // Value label size: about as wide as its bar (3 px over on each side,
  // which clears the labels of bars of other heights), at most 10 pt.
  // Below 8.5 pt they become hard to read and ran into each other: fewer
  // decimals (down to 2) make them shorter, and when even that is too
  // small they are left out (the grid lines give the values; more than 40
  // bars never get them).
  // But the bars of one category stand side by side, their centres only a
  // bar's width apart: where two of their labels stand at about the same
  // height (within a line of text), they get no more than that width, less
  // 4 px between them, or they read as one number ("0.350.35", two heads of
  // equal entropy in chapter 7 on a text of two words).
  bool level_neighbours = false;
  for (std::size_t i = 0; i < ncat; ++i) {
    for (std::size_t g = 1; g < ngroup; ++g) {
      const double a = c.groups[g - 1].values[i], b = c.groups[g].values[i];
      if (!std::isfinite(a) || !std::isfinite(b) || (a >= 0) != (b >= 0)) continue;
      if (std::abs(ya.frac(label_at(a)) - ya.frac(label_at(b))) * frame.h < 14) level_neighbours = true;
    }
  }
  const double bar_px = slot_px * bar_w * 0.95;
  const double room_px = level_neighbours ? slot_px * bar_w - 4 : bar_px + 6;
  auto fitting_pt = [&] {
    std::size_t chars = 1;
    for (const auto& g : c.groups)
      for (double v : g.values)
        if (std::isfinite(v)) chars = std::max(chars, value_text(v).size());
    return 10.0 * room_px / text_px(chars, 10, true);
  };
  double value_pt = fitting_pt();
  while (value_pt < kMinValuePt && !general && decimals > 2) {
    --decimals;
    value_pt = fitting_pt();
  }
  value_pt = std::min(value_pt, 10.0);
  const bool value_labels = ncat * ngroup <= 40 && value_pt >= kMinValuePt;
  int tag = 1;
  std::string plot = "plot ";
  for (std::size_t g = 0; g < ngroup; ++g) {
    std::string data;
    for (std::size_t i = 0; i < ncat; ++i) {
      const double v = c.groups[g].values[i];
      data += fmt::format("{} {}\n", num(bar_x(i, g)), num(v));
      if (value_labels && std::isfinite(v)) {
        s += fmt::format("set label {} {} at {},{} center offset 0,{} font ',{:.3g}' tc rgb '#303030' front\n",
                         tag++, gq(value_text(v)), num(bar_x(i, g)), num(label_at(v)), v >= 0 ? 0.7 : -0.7,
                         value_pt);
      }
    }
    const std::string block = fmt::format("$bars{}_{}", id, g);
    datablock(s, block, data);
    plot += fmt::format("{}{} using 1:2:({}) with boxes lc rgb '{}' {}", g ? ", \\\n     " : "", block,
                        num(bar_w * 0.95), cycle_colour(g), title_clause(c.groups[g].name));
  }
  // Reference lines last: over the bars, under the (front) value labels.
  for (const RefLine& h : c.hlines) plot += ", \\\n     " + refline_clause(h.y);
  s += plot + "\n";
}

}  // namespace

std::string bars(const std::string& png_path, const BarChart& c, int width, int height) {
  validate("bars", c);
  check_size("bars", width, height);
  if (!available()) return skipped();
  std::string s = kChartStyle;
  bar_panel(s, c, width, height, 0, width, height, 0, 15);
  return render("bars", png_path, width, height, s);
}

std::string bars_row(const std::string& png_path, const std::string& title, const std::vector<BarChart>& charts,
                     int panel_width, int height) {
  if (charts.empty()) bad_input("bars_row", "no charts");
  for (std::size_t k = 0; k < charts.size(); ++k) validate("bars_row", charts[k], fmt::format("chart {}: ", k));
  const int width = panel_width * static_cast<int>(charts.size());
  check_size("bars_row", width, height);
  if (!available()) return skipped();
  // The overall title in a band on top; each chart, titled, in a column.
  const PageTitle page = page_title(title, width, 15, 11, 50);
  const double top = 1.0 - static_cast<double>(page.px) / height;
  std::string s = kChartStyle + page.command;
  for (std::size_t k = 0; k < charts.size(); ++k) {
    const double left = static_cast<double>(k) * panel_width;
    s += fmt::format("set origin {:.5f},0\nset size {:.5f},{:.5f}\n", left / width,
                     static_cast<double>(panel_width) / width, top);
    bar_panel(s, charts[k], panel_width, height - page.px, left, width, height, k, 13);
  }
  return render("bars_row", png_path, width, height, s);
}

}  // namespace sa::plot
