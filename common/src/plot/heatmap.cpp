// Heatmaps: one matrix as coloured cells (heatmap, weights_heatmap for
// attention weights), and a grid of them under one title (heatmap_grid).
// measure sizes a panel from its text, draw_panel draws it, whole figure or
// multiplot panel alike.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace sa::plot {

using namespace detail;

namespace {

// A heatmap's input checked; `where` starts each message (a grid's "panel k: ").
void validate(std::string_view fn, const Heatmap& h, const std::string& where = "") {
  const auto rows = h.values.rows(), cols = h.values.cols();
  if (rows == 0 || cols == 0) bad_input(fn, where + "empty matrix");
  if (!h.row_labels.empty() && static_cast<Eigen::Index>(h.row_labels.size()) != rows) {
    bad_input(fn, fmt::format("{}{} row labels for a {} x {} matrix", where, h.row_labels.size(), rows, cols));
  }
  if (!h.col_labels.empty() && static_cast<Eigen::Index>(h.col_labels.size()) != cols) {
    bad_input(fn, fmt::format("{}{} column labels for a {} x {} matrix", where, h.col_labels.size(), rows, cols));
  }
  if (h.vmin && h.vmax && !(*h.vmin < *h.vmax)) {
    bad_input(fn, fmt::format("{}vmin {} must be below vmax {}", where, *h.vmin, *h.vmax));
  }
  if ((h.vmin && !std::isfinite(*h.vmin)) || (h.vmax && !std::isfinite(*h.vmax))) {
    bad_input(fn, where + "vmin and vmax must be finite");
  }
  if (h.decimals < 0 || h.decimals > 10) bad_input(fn, fmt::format("{}decimals {} not in 0..10", where, h.decimals));
  if (!h.category_colours.empty() && h.category_colours.size() != h.categories.size()) {
    bad_input(fn, fmt::format("{}{} category colours for {} categories", where, h.category_colours.size(),
                              h.categories.size()));
  }
  for (const std::string& c : h.category_colours)
    if (c.size() != 7 || c[0] != '#' || c.find_first_not_of("0123456789abcdefABCDEF", 1) != std::string::npos)
      bad_input(fn, fmt::format("{}category colour '{}' is not #rrggbb", where, c));
  if (!h.categories.empty()) {
    const auto n = static_cast<float>(h.categories.size());
    for (Eigen::Index i = 0; i < h.values.size(); ++i) {
      const float v = h.values.data()[i];
      if (!(v >= 0 && v < n && v == std::floor(v)))
        bad_input(fn, fmt::format("{}value {} is not a category index 0..{}", where, v, h.categories.size() - 1));
    }
  }
}

// Category k's colour: the one given, else line colour k.
Rgb category_rgb(const Heatmap& h, std::size_t k) {
  if (h.category_colours.empty()) return cycle_rgb(k);
  const std::uint32_t hex = static_cast<std::uint32_t>(std::stoul(h.category_colours[k].substr(1), nullptr, 16));
  return {((hex >> 16) & 0xff) / 255.0, ((hex >> 8) & 0xff) / 255.0, (hex & 0xff) / 255.0};
}

// The colours: the data's range (symmetric about 0 when diverging) unless
// vmin/vmax are given, and never an empty range.
ColourScale heatmap_scale(const Heatmap& h) {
  const auto [mn, mx] = finite_range(h.values);
  double lo = mn, hi = mx;
  if (h.diverging) {
    const double m = std::max(std::abs(mn), std::abs(mx));
    lo = -m;
    hi = m;
  }
  if (h.vmin) lo = *h.vmin;
  if (h.vmax) hi = *h.vmax;
  if (!(lo < hi)) {  // constant data, or one bound given beyond the data
    const double pad = std::max({std::abs(lo), std::abs(hi), 1.0}) * 0.5;
    if (h.vmax && !h.vmin) {
      lo = hi - pad;
    } else if (h.vmin && !h.vmax) {
      hi = lo + pad;
    } else {  // constant data: put it mid-palette, not at the white end
      lo -= pad;
      hi += pad;
    }
  }
  return {h.diverging ? &blue_white_red() : &blues(), lo, hi, h.diverging};
}

// A cell's value as written in it. A NaN cell holds no value (chapter 7's
// positions past a sentence's end): grey, and nothing written.
std::string cell_text(float v, int decimals) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find_first_not_of("-0.") == std::string::npos && s[0] == '-') s.erase(0, 1);  // no "-0.00"
  return s;
}

// ---- Layout ---------------------------------------------------------------
//
// The layout is ours, not gnuplot's. gnuplot sizes its margins before it
// knows how far rotated tic labels reach and then applies `set size ratio`,
// so long keys squeezed the cells into short, wide strips (or slivers in a
// grid) and pushed labels over each other. Here every text a panel holds is
// measured (label_px), the margins around the plot area are sized from
// those measures, and the plot area, colour bar, titles and legend are
// placed in pixels: `set margin at screen`, `set colorbox user`, labels at
// screen positions. Cells are square by construction, and long labels make
// the canvas larger instead of the cells smaller.

// Distances in pixels, measured on pngcairo where gnuplot decides them.
constexpr double kPad = 8;         // a panel's edge to its outermost text
constexpr double kTicGap = 9;      // the plot border to its tic labels (gnuplot's, at tic scale 0)
constexpr double kAxisGap = 6;     // tic labels to the axis title
constexpr double kTitleGap = 10;   // a panel's title to its plot area
constexpr double kBarGap = 14;     // the plot area to its colour bar or legend
constexpr double kBarWidth = 16;
constexpr double kBarTicGap = 10;  // the colour bar to its tic labels (gnuplot's)
constexpr double kMinBarPx = 120;  // a colour bar shorter than this reads badly: it grows past a low plot
constexpr double kColumnGap = 24;  // between the panels of a grid
constexpr double kRowGap = 12;
constexpr double kSin45 = 0.7071;
// Labels at 45 degrees need cells this many em wide to keep clear of each
// other (their lines are 0.71 of a cell apart).
constexpr double kSlantedEm = 1.7;

// The em of type set at `pt` points, and a line of it (DejaVu Sans: ascent
// plus descent, 1.16 em), in pixels.
double em_px(double pt) { return pt * kPxPerPt; }
double line_px(double pt) { return 1.17 * pt * kPxPerPt; }

// A panel's type sizes, all following its tic labels'.
struct Type {
  double tic;
  double axis() const { return tic + 1; }   // "key", "query"
  double title() const { return tic + 3; }  // the panel's title
  double bar() const { return tic; }        // the colour bar's numbers
};

// One axis's tic labels: the text at each position (the indices when the
// heatmap has none), every stride-th shown, turned by `rotate` degrees
// (x axis: 0, 45 or 90).
struct Tics {
  std::vector<std::string> text;
  std::size_t stride = 1;
  int rotate = 0;
  double widest = 0;  // px, of the labels shown
};

std::vector<std::string> labels_or_indices(const std::vector<std::string>& labels, std::size_t n) {
  if (!labels.empty()) return labels;
  std::vector<std::string> indices;
  for (std::size_t i = 0; i < n; ++i) indices.push_back(std::to_string(i));
  return indices;
}

// Labels that are numbers (positions, tile offsets; blanks allowed) are
// thinned to every k-th rather than turned: "0 2 4 6" reads better than ten
// numbers standing on end. Words are turned, since each one matters.
bool all_numbers(const std::vector<std::string>& labels) {
  return std::all_of(labels.begin(), labels.end(), [](const std::string& l) {
    return l.find_first_not_of("0123456789-.") == std::string::npos;
  });
}

// The smallest round step (1, 2, 4, 5, 8, 10, 20, ...) of at least k.
std::size_t round_step(std::size_t k) {
  for (std::size_t base = 1;; base *= 10)
    for (std::size_t step : {base, 2 * base, 4 * base, 5 * base, 8 * base})
      if (step >= k) return step;
}

// Every stride-th of n labels, each given `need` pixels along an axis of
// cells `cell` wide: round steps for numbers, and for bare indices also at
// most 16 of them (64 positions read 0, 4, 8, ...). Labels with blanks
// among them have been thinned by the caller ("0", "", "", "", "", "5"):
// all are kept.
std::size_t stride_for(const std::vector<std::string>& text, double need, double cell, bool numbers, bool indices) {
  const std::size_t n = text.size();
  if (std::any_of(text.begin(), text.end(), [](const std::string& l) { return l.empty(); })) return 1;
  auto k = static_cast<std::size_t>(std::max(1.0, std::ceil(need / cell - 1e-9)));
  if (indices) k = std::max(k, (n + 15) / 16);
  return numbers ? round_step(k) : k;
}

double widest_shown(const Tics& t, double pt) {
  double w = 0;
  for (std::size_t i = 0; i < t.text.size(); i += t.stride) w = std::max(w, label_px(t.text[i], pt));
  return w;
}

// The key (x) labels for cells `cell` wide: upright when the widest fits
// its cell (numbers: when every k-th fits), else at 45 degrees while the
// slanted lines keep clear of each other, else at 90, else every k-th at
// 90. `rotate` forces an angle (a grid turns every panel's keys alike).
Tics x_tics(const Heatmap& h, double cell, double pt, std::optional<int> rotate = std::nullopt) {
  const auto n = static_cast<std::size_t>(h.values.cols());
  Tics t;
  t.text = labels_or_indices(h.col_labels, n);
  const bool numbers = all_numbers(t.text), indices = h.col_labels.empty();
  double widest = 0;
  for (const std::string& l : t.text) widest = std::max(widest, label_px(l, pt));
  const double em = em_px(pt), upright = widest + 0.5 * em;
  t.rotate = rotate ? *rotate : numbers || upright <= cell ? 0 : cell >= kSlantedEm * em ? 45 : 90;
  t.stride = stride_for(t.text, t.rotate == 0 ? upright : t.rotate == 45 ? kSlantedEm * em : 1.1 * em, cell,
                        numbers, indices);
  t.widest = widest_shown(t, pt);
  return t;
}

// The query (y) labels: upright, every k-th when the rows are lower than
// a line of text.
Tics y_tics(const Heatmap& h, double cell, double pt) {
  const auto n = static_cast<std::size_t>(h.values.rows());
  Tics t;
  t.text = labels_or_indices(h.row_labels, n);
  t.stride = stride_for(t.text, 1.1 * em_px(pt), cell, all_numbers(t.text), h.row_labels.empty());
  t.widest = widest_shown(t, pt);
  return t;
}

// How far the key labels reach below the plot area (from its border).
double x_tics_depth(const Tics& t, double pt) {
  const double line = line_px(pt);
  const double reach = t.rotate == 0 ? line : t.rotate == 45 ? kSin45 * (t.widest + 0.5 * line) : t.widest;
  return kTicGap + reach;
}

// How far the key labels reach past the plot area's left (right = false:
// right) border, in pixels; negative when they stay inside. A label at 45
// degrees ends at its tic and runs down to the left.
double x_tics_overhang(const Tics& t, double cell, double pt, bool left) {
  const double line = line_px(pt);
  double reach = -1e9;
  for (std::size_t j = 0; j < t.text.size(); j += t.stride) {
    const double w = label_px(t.text[j], pt);
    const double room = (left ? static_cast<double>(j) + 0.5 : static_cast<double>(t.text.size() - j) - 0.5) * cell;
    const double out = t.rotate == 0 ? w / 2 : t.rotate == 90 ? line / 2 : left ? kSin45 * (w + 0.5 * line) : line / 2;
    reach = std::max(reach, out - room);
  }
  return reach;
}

// Tic labels as gnuplot's explicit list `('the' 0, 'cat' 1, ...)`.
std::string tic_command(const Tics& t) {
  std::string s = "(";
  for (std::size_t i = 0; i < t.text.size(); i += t.stride) {
    s += fmt::format("{}{} {}", i ? ", " : "", gq(t.text[i], false), i);
  }
  return s + ")";
}

// The colour bar's tics: round values (1, 2 or 5 times a power of ten),
// about one every 36 px of a bar `px` tall, 3 to 9 of them, written with
// one number of decimals (0.00, 0.05, 0.10 rather than 0, 0.05, 0.1).
struct BarTics {
  std::vector<double> at;
  std::vector<std::string> text;
  double widest = 0;  // px
};

BarTics bar_tics(const ColourScale& scale, double px, double pt) {
  const double span = scale.hi - scale.lo, raw = span / std::clamp(std::floor(px / 36), 2.0, 8.0);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  BarTics b;
  for (double k = std::ceil(scale.lo / step - 1e-9); k * step <= scale.hi + 1e-9 * span; ++k) {
    const double v = k * step;
    std::string text = fmt::format("{:.{}f}", v, decimals);
    if (text.find_first_not_of("-0.") == std::string::npos && text[0] == '-') text.erase(0, 1);  // no "-0.0"
    b.widest = std::max(b.widest, label_px(text, pt));
    b.at.push_back(v);
    b.text.push_back(std::move(text));
  }
  return b;
}

// What sits right of a panel's plot area: its colour bar, its legend of
// categories, or nothing (a grid's panels on one scale share one bar).
enum class Side { bar, legend, none };

// One heatmap panel measured: its cells, labels and margins, in pixels.
struct Panel {
  const Heatmap* h = nullptr;
  std::size_t rows = 0, cols = 0;
  ColourScale scale{};
  Type type{};
  double cell = 0;
  Tics x, y;
  Side side = Side::bar;
  BarTics bar;
  bool ylabel = true;  // write the y axis title (a grid writes one every panel shares once, on the left)
  std::vector<std::string> values;  // the cells' texts, row by row
  double value_pt = 0;              // 0: the cells stay blank
  std::string title;
  double title_pt = 0;
  // Margins around the plot area.
  double left = 0, right = 0, top = 0, bottom = 0;

  double plot_w() const { return static_cast<double>(cols) * cell; }
  double plot_h() const { return static_cast<double>(rows) * cell; }
  // The height of what sits right of the plot area (from its top edge).
  double side_h() const {
    if (side == Side::bar) return std::max(plot_h(), kMinBarPx);
    if (side == Side::legend) return 1.5 * line_px(type.tic) * static_cast<double>(h->categories.size());
    return 0;
  }
  double width() const { return left + plot_w() + right; }
  double height() const { return top + std::max(plot_h() + bottom, side_h() + kPad); }
};

// The width of a colour bar with its numbers and title.
double bar_block(const BarTics& b, const Heatmap& h, const Type& type) {
  return kBarGap + kBarWidth + kBarTicGap + b.widest + (h.cblabel.empty() ? 0 : kAxisGap + line_px(type.axis())) +
         kPad;
}

// Measures heatmap h drawn with cells `cell` pixels wide (all but the
// title, see fit_panel_title).
Panel measure(const Heatmap& h, double cell, const Type& type, Side side, bool ylabel,
              std::optional<int> rotate = std::nullopt) {
  Panel p;
  p.h = &h;
  p.rows = static_cast<std::size_t>(h.values.rows());
  p.cols = static_cast<std::size_t>(h.values.cols());
  p.scale = heatmap_scale(h);
  p.type = type;
  p.cell = cell;
  p.side = side;
  p.ylabel = ylabel && !h.ylabel.empty();
  p.x = x_tics(h, cell, type.tic, rotate);
  p.y = y_tics(h, cell, type.tic);

  // The values, in the largest type that fits the cell (never above the
  // tic labels' + 1 pt), or none when that is below kMinValuePt.
  double widest_em = 0;
  for (std::size_t i = 0; i < p.rows; ++i) {
    for (std::size_t j = 0; j < p.cols; ++j) {
      p.values.push_back(cell_text(h.values(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)), h.decimals));
      widest_em = std::max(widest_em, label_px(p.values.back(), 1.0) / kPxPerPt);
    }
  }
  const double fit_pt = std::min({type.tic + 1, 0.8 * cell / (widest_em * kPxPerPt), 0.42 * cell / kPxPerPt});
  if (h.annotate.value_or(p.rows <= 12 && p.cols <= 12) && fit_pt >= kMinValuePt) p.value_pt = fit_pt;

  const double axis_line = line_px(type.axis());
  p.left = std::max(kPad + (p.ylabel ? axis_line + kAxisGap : 0) + p.y.widest + kTicGap,
                    kPad + x_tics_overhang(p.x, cell, type.tic, true));
  if (side == Side::bar) {
    p.bar = bar_tics(p.scale, p.side_h(), type.bar());
    p.right = bar_block(p.bar, h, type);
  } else if (side == Side::legend) {
    double widest = 0;
    for (const std::string& c : h.categories) widest = std::max(widest, label_px(c, type.tic));
    p.right = kBarGap + em_px(type.tic) + 6 + widest + kPad;
  } else {
    p.right = kPad;
  }
  p.right = std::max(p.right, kPad + x_tics_overhang(p.x, cell, type.tic, false));
  p.bottom = x_tics_depth(p.x, type.tic) + (h.xlabel.empty() ? 0 : kAxisGap + axis_line) + kPad;
  p.top = kPad;
  return p;
}

// The title fitted to `avail` pixels (smaller, then on two lines), at
// most `pt` points (default: the panel's title size), and the top margin
// it needs.
void fit_panel_title(Panel& p, double avail, std::optional<double> pt = std::nullopt) {
  if (p.h->title.empty()) return;
  std::tie(p.title, p.title_pt) = fit_title(p.h->title, avail, pt.value_or(p.type.title()), p.type.tic, true);
  const auto lines = static_cast<double>(1 + std::count(p.title.begin(), p.title.end(), '\n'));
  p.top = kPad + lines * line_px(p.title_pt) + kTitleGap;
}

// Pixel positions on the canvas as gnuplot's screen coordinates (0 at the
// bottom left, 1 at the top right).
struct Canvas {
  double w, h;
  std::string x(double px) const { return fmt::format("{:.5f}", px / w); }
  std::string y(double py) const { return fmt::format("{:.5f}", 1 - py / h); }
};

// Where a panel goes: its plot area's top-left corner, the panel's left
// and right edges (a title wider than the plot area stays between them),
// and how far below the plot area its key labels reach (in a grid, the
// deepest of its row, so that the axis titles of a row line up).
struct Place {
  double x, y;
  double box_left, box_right;
  double tics_depth;
};

// The colour bar a grid's panels share, drawn by one of them.
struct SharedBar {
  double x, y, h;  // the bar's left edge, top and height, px
  BarTics tics;
};

// A label at pixel (x, y) of the canvas, its (first) line centred on y;
// `align` is center, left or right.
std::string text_at(const Canvas& cv, int tag, const std::string& text, double x, double y, const char* align,
                    double pt, bool vertical = false) {
  return fmt::format("set label {} {} at screen {}, screen {} {}{} front tc rgb '#1a1a1a' font ',{:.3g}'\n", tag,
                     gq(text), cv.x(x), cv.y(y), align, vertical ? " rotate by 90" : "", pt);
}

// x for a text `w` wide centred on `centre`, moved as little as needed to
// stay between lo and hi.
double centred_within(double centre, double w, double lo, double hi) {
  return std::clamp(centre, lo + w / 2, std::max(lo + w / 2, hi - w / 2));
}

// Emits one measured panel at `at` on the canvas (a whole figure or one
// multiplot panel). id: unique datablock suffix; shared: the grid's one
// colour bar, when this panel draws it.
void draw_panel(std::string& s, const Panel& p, int id, const Canvas& cv, const Place& at,
                const std::optional<SharedBar>& shared = std::nullopt) {
  const Heatmap& h = *p.h;
  const std::size_t rows = p.rows, cols = p.cols;
  const Type& type = p.type;
  const double x0 = at.x, y0 = at.y, x1 = x0 + p.plot_w(), y1 = y0 + p.plot_h();

  // Fresh panel: clear what the previous multiplot panel set.
  s += "unset label\nunset arrow\nunset object\nunset logscale\nunset key\nunset grid\nunset title\n";
  s += "unset xlabel\nunset ylabel\nunset cblabel\nset view map\n";
  s += "set border 15 lw 1 lc rgb '#808080'\n";
  // The plot area, exactly: cells are square because its sides are.
  s += fmt::format("set lmargin at screen {}\nset rmargin at screen {}\n", cv.x(x0), cv.x(x1));
  s += fmt::format("set tmargin at screen {}\nset bmargin at screen {}\n", cv.y(y0), cv.y(y1));
  // Tic labels take the border's colour unless told otherwise.
  s += "set tics scale 0 nomirror textcolor rgb '#1a1a1a'\n";
  s += fmt::format("set xtics {} font ',{}'", tic_command(p.x), type.tic);
  s += p.x.rotate ? fmt::format(" rotate by {} right\n", p.x.rotate) : std::string(" norotate\n");
  s += fmt::format("set ytics {} font ',{}'\n", tic_command(p.y), type.tic);

  // Titles and axis titles as labels placed by us (gnuplot would place
  // them by its own estimate of the tic labels).
  int tag = 1;
  const double line = line_px(type.axis());
  if (!p.title.empty()) {
    const double w = widest_line_px(p.title, p.title_pt, true);
    const auto lines = static_cast<double>(1 + std::count(p.title.begin(), p.title.end(), '\n'));
    const double first = y0 - kTitleGap - (lines - 0.5) * line_px(p.title_pt);
    const double cx = centred_within((x0 + x1) / 2, w, at.box_left + kPad, at.box_right - kPad);
    s += text_at(cv, tag++, p.title, cx, first, "center", p.title_pt);
  }
  if (!h.xlabel.empty()) {
    const double cx = centred_within((x0 + x1) / 2, label_px(h.xlabel, type.axis()), at.box_left + kPad,
                                     at.box_right - kPad);
    s += text_at(cv, tag++, h.xlabel, cx, y1 + at.tics_depth + kAxisGap + line / 2, "center", type.axis());
  }
  if (p.ylabel) {  // beside this panel's own row labels
    s += text_at(cv, tag++, h.ylabel, x0 - p.left + kPad + line / 2, (y0 + y1) / 2, "center", type.axis(), true);
  }

  // Column j at x = j, row i at y = i; the y axis runs downwards (reversed
  // range), so row 0 is at the top like a table.
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [{}:-0.5]\n", cols - 0.5, rows - 0.5);
  // The colour bar: this panel's own beside it, the grid's shared one, or none.
  const SharedBar* bar = nullptr;
  std::optional<SharedBar> own;
  if (p.side == Side::bar) {
    own = SharedBar{x1 + kBarGap, y0, p.side_h(), p.bar};
    bar = &*own;
  } else if (shared) {
    bar = &*shared;
  }
  if (h.categories.empty()) {
    // (maxcolors 0: every shade again, should a categorical panel come before)
    s += fmt::format("set cbrange [{:.10g}:{:.10g}]\nset palette maxcolors 0\n", p.scale.lo, p.scale.hi);
    s += p.scale.command();
  } else {
    // n flat colours: value k sits in the middle of the k-th of n equal
    // slices of the range, and `maxcolors n` keeps gnuplot from blending.
    const std::size_t n = h.categories.size();
    s += fmt::format("set cbrange [-0.5:{}]\nset palette maxcolors {}\nset palette defined (", n - 0.5,
                     std::max<std::size_t>(n, 2));
    for (std::size_t k = 0; k < std::max<std::size_t>(n, 2); ++k)
      s += fmt::format("{}{} '{}'", k ? ", " : "", k, rgb_hex(category_rgb(h, std::min(k, n - 1))));
    s += ")\n";
  }
  if (bar) {
    s += fmt::format("set colorbox user origin screen {}, screen {} size screen {}, screen {}\n", cv.x(bar->x),
                     cv.y(bar->y + bar->h), num(kBarWidth / cv.w), num(bar->h / cv.h));
    std::string list;
    for (std::size_t k = 0; k < bar->tics.at.size(); ++k)
      list += fmt::format("{}{} {:.10g}", k ? ", " : "", gq(bar->tics.text[k]), bar->tics.at[k]);
    s += fmt::format("set cbtics ({}) scale 0 font ',{}'\n", list, type.bar());
    if (!h.cblabel.empty()) {
      s += text_at(cv, tag++, h.cblabel, bar->x + kBarWidth + kBarTicGap + bar->tics.widest + kAxisGap + line / 2,
                   bar->y + bar->h / 2, "center", type.axis(), true);
    }
  } else {
    s += "unset colorbox\n";
  }
  // Categories: a swatch of each colour and its name, right of the cells.
  int object = 2;
  if (p.side == Side::legend) {
    const double step = 1.5 * line_px(type.tic), sw = em_px(type.tic);
    double y = (y0 + y1) / 2 - step * static_cast<double>(h.categories.size()) / 2 + step / 2;
    for (std::size_t k = 0; k < h.categories.size(); ++k, y += step) {
      s += fmt::format(
          "set object {} rectangle from screen {}, screen {} to screen {}, screen {} front fc rgb '{}' fs solid 1.0 "
          "border lc rgb '#b0b0b0'\n",
          object++, cv.x(x1 + kBarGap), cv.y(y - sw / 2), cv.x(x1 + kBarGap + sw), cv.y(y + sw / 2),
          rgb_hex(category_rgb(h, k)));
      s += text_at(cv, tag++, h.categories[k], x1 + kBarGap + sw + 6, y, "left", type.tic);
    }
  }
  // Masked cells (NaN, +-inf) are written as NaN and not drawn; this grey
  // rectangle behind the image shows through them.
  s += fmt::format("set object 1 rectangle from -0.5,-0.5 to {},{} behind fc rgb '{}' fs solid 1.0 noborder\n",
                   cols - 0.5, rows - 0.5, kMaskedFill);
  // Thin white lines between cells, when the cells are big enough.
  if (p.cell >= 14 && rows <= 40 && cols <= 40) {
    int a = 1;
    for (std::size_t j = 1; j < cols; ++j) {
      s += fmt::format("set arrow {} from {},-0.5 to {},{} nohead front lw 1 lc rgb 'white'\n", a++, j - 0.5, j - 0.5,
                       rows - 0.5);
    }
    for (std::size_t i = 1; i < rows; ++i) {
      s += fmt::format("set arrow {} from -0.5,{} to {},{} nohead front lw 1 lc rgb 'white'\n", a++, i - 0.5,
                       cols - 0.5, i - 0.5);
    }
  }
  if (p.value_pt > 0) {
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        const float v = h.values(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
        const char* colour = !std::isfinite(v)      ? kMaskedText
                             : h.categories.empty() ? text_on(p.scale.at(v))
                                                    : text_on(category_rgb(h, static_cast<std::size_t>(v)));
        s += fmt::format("set label {} {} at {},{} center front tc rgb '{}' font ',{:.1f}'\n", tag++,
                         gq(p.values[i * cols + j]), j, i, colour, p.value_pt);
      }
    }
  }

  // `with image` refuses grids thinner than 2 x 2: those are drawn as 1 x 1
  // boxes. The image skips NaN pixels, but a box with a NaN colour comes out
  // white (even when filtered with a 1/0 in `using`), so for boxes masked
  // cells are left out of the data and the grey rectangle shows through.
  const bool as_image = rows >= 2 && cols >= 2;
  std::string data;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const float v = h.values(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
      if (as_image || std::isfinite(v)) data += fmt::format("{} {} {}\n", j, i, num(v));
    }
    data += "\n";
  }
  if (data.find_first_not_of('\n') == std::string::npos) data = "NaN NaN NaN\n";  // all masked: keep plot valid
  const std::string block = fmt::format("$heat{}", id);
  datablock(s, block, data);
  if (as_image) {
    s += "plot " + block + " using 1:2:3 with image notitle\n";
  } else {
    s += "plot " + block + " using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette notitle\n";
  }
}

}  // namespace

Heatmap weights_heatmap(std::string title, Matrix weights, const std::vector<std::string>& labels) {
  Heatmap h;
  h.title = std::move(title);
  h.values = std::move(weights);
  h.row_labels = labels;
  h.col_labels = labels;
  h.vmin = 0;
  h.vmax = 1;
  // The colour bar says what its colours are, as every chapter's own
  // weight figures do (chapter 7's grids had a bare 0-to-1 scale).
  h.cblabel = "weight";
  return h;
}

std::string heatmap(const std::string& png_path, const Heatmap& h, int width, int height) {
  validate("heatmap", h);
  check_size("heatmap", width, height);
  if (!available()) return skipped();
  const Type type{11};
  const Side side = h.categories.empty() ? Side::bar : Side::legend;
  const auto rows = static_cast<double>(h.values.rows()), cols = static_cast<double>(h.values.cols());
  // The largest square cells the canvas holds. Narrower cells may turn or
  // thin the key labels, which changes the margins, so the size is found
  // in rounds; each round's cells are narrower, its margins no smaller.
  double cell = std::min(width / cols, height / rows);
  Panel p;
  for (int round = 0; round < 8; ++round) {
    p = measure(h, cell, type, side, true);
    fit_panel_title(p, width - 2 * kPad);
    const double fits = std::min((width - p.left - p.right) / cols, (height - p.top - p.bottom) / rows);
    if (fits >= 0.999 * cell) break;
    cell = fits;
  }
  // Labels so long that the cells would shrink below a plot of 160 px
  // make the canvas larger instead.
  if (cell * std::max(rows, cols) < 160) {
    p = measure(h, 160 / std::max(rows, cols), type, side, true);
    fit_panel_title(p, width - 2 * kPad);
  }
  // A matrix far from square leaves most of the canvas empty around its
  // square cells (a positional encoding of d_model 2 is a thin column, of
  // d_model 1024 a thin band): a side the panel fills less than half of
  // shrinks to it, the title set on two lines over half the width if need
  // be. The other figures keep the size asked for, so that a chapter's
  // figures share one size.
  double canvas_w = std::max<double>(width, p.width());
  if (p.width() < 0.5 * width) {
    fit_panel_title(p, std::max(p.width(), 0.5 * width) - 2 * kPad);
    canvas_w = std::max(p.width(), widest_line_px(p.title, p.title_pt, true) + 2 * kPad);
  }
  const double canvas_h = p.height() < 0.5 * height ? p.height() : std::max<double>(height, p.height());
  const Canvas cv{std::ceil(canvas_w), std::ceil(canvas_h)};
  // The panel in the middle of the canvas.
  const double x = (cv.w - p.width()) / 2 + p.left, y = (cv.h - p.height()) / 2 + p.top;
  std::string body;
  draw_panel(body, p, 0, cv, {x, y, 0, cv.w, x_tics_depth(p.x, type.tic)});
  return render("heatmap", png_path, static_cast<int>(cv.w), static_cast<int>(cv.h), body);
}

std::string heatmap_grid(const std::string& png_path, const std::string& title, int rows, int cols,
                         const std::vector<Heatmap>& panels, int panel_px) {
  check_grid("heatmap_grid", rows, cols, panels.size());
  for (std::size_t k = 0; k < panels.size(); ++k) {
    validate("heatmap_grid", panels[k], fmt::format("panel {}: ", k));
  }
  check_size("heatmap_grid", panel_px, panel_px);
  if (!available()) return skipped();

  // Smaller panels, smaller type, but never below 9 pt: labels must read at
  // 100 % (11 pt at 420 px and more).
  const Type type{std::clamp(panel_px / 38.0, 9.0, 11.0)};
  // One cell size for every panel: the largest matrix fills about
  // panel_px - 160 px, what short labels and a colour bar leave of a panel
  // that size. Longer labels widen the panel rather than shrink its cells.
  // Rows are at least a line of text high, so that every label shows, and
  // columns of words wide enough to turn their labels by 45 degrees, as
  // long as that takes at most twice the room (else labels stand on end,
  // or every k-th is shown).
  std::size_t n = 1;
  bool words = false;
  for (const Heatmap& h : panels) {
    n = std::max({n, static_cast<std::size_t>(h.values.rows()), static_cast<std::size_t>(h.values.cols())});
    words = words || !all_numbers(labels_or_indices(h.col_labels, static_cast<std::size_t>(h.values.cols())));
  }
  const double room = std::max(panel_px - 160.0, 80.0);
  const double readable = (words ? kSlantedEm : 1.1) * em_px(type.tic);
  const double cell = std::max(room / static_cast<double>(n), std::min(readable, 2 * room / static_cast<double>(n)));

  auto shared = [&](auto same) {
    return std::all_of(panels.begin(), panels.end(), [&](const Heatmap& h) { return same(h, panels.front()); });
  };
  // Panels on one colour scale share one colour bar, right of the grid:
  // a bar beside every panel repeats it and takes the room of a column.
  const ColourScale first = heatmap_scale(panels.front());
  const bool one_bar = shared([&](const Heatmap& h, const Heatmap& f) {
    const ColourScale sc = heatmap_scale(h);
    return h.categories.empty() && sc.lo == first.lo && sc.hi == first.hi && sc.diverging == first.diverging &&
           h.cblabel == f.cblabel;
  });
  // An axis title every panel shares ("query") is written once, left of
  // the first column.
  const bool one_ylabel = shared([](const Heatmap& h, const Heatmap& f) { return h.ylabel == f.ylabel; });
  // One turn of the key labels for every panel, the most any panel needs.
  int rotate = 0;
  for (const Heatmap& h : panels) rotate = std::max(rotate, x_tics(h, cell, type.tic).rotate);

  const auto R = static_cast<std::size_t>(rows), C = static_cast<std::size_t>(cols);
  std::vector<Panel> measured;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const Heatmap& h = panels[k];
    const Side side = !h.categories.empty() ? Side::legend : one_bar ? Side::none : Side::bar;
    measured.push_back(measure(h, cell, type, side, !one_ylabel || k % C == 0, rotate));
  }
  // Columns as wide as their widest panel's parts and rows as high as
  // their highest's, so plot areas line up down a column and along a row.
  std::vector<double> left(C), plot_w(C), right(C), top(R), below(R), plot_h(R), depth(R);
  for (std::size_t k = 0; k < measured.size(); ++k) {
    const Panel& p = measured[k];
    const std::size_t c = k % C;
    left[c] = std::max(left[c], p.left);
    plot_w[c] = std::max(plot_w[c], p.plot_w());
    right[c] = std::max(right[c], p.right);
  }
  // Titles fitted to their columns, then all set in the smallest size any
  // of them needed (a wider first column must not give its panel a larger
  // title than the others).
  auto title_room = [&](std::size_t k) { return left[k % C] + plot_w[k % C] + right[k % C] - 2 * kPad; };
  double title_pt = type.title();
  for (std::size_t k = 0; k < measured.size(); ++k) {
    fit_panel_title(measured[k], title_room(k));
    if (!measured[k].title.empty()) title_pt = std::min(title_pt, measured[k].title_pt);
  }
  for (std::size_t k = 0; k < measured.size(); ++k) {
    Panel& p = measured[k];
    const std::size_t r = k / C;
    fit_panel_title(p, title_room(k), title_pt);
    top[r] = std::max(top[r], p.top);
    below[r] = std::max(below[r], p.height() - p.top);
    plot_h[r] = std::max(plot_h[r], p.plot_h());
    depth[r] = std::max(depth[r], x_tics_depth(p.x, type.tic));
  }
  // Panel edges (y: below the page title), with a gap between panels that
  // keeps their titles apart.
  std::vector<double> col_x(C + 1, 0.0), row_y(R + 1, 0.0);
  for (std::size_t c = 0; c < C; ++c)
    col_x[c + 1] = col_x[c] + left[c] + plot_w[c] + right[c] + (c + 1 < C ? kColumnGap : 0);
  for (std::size_t r = 0; r < R; ++r) row_y[r + 1] = row_y[r] + top[r] + below[r] + (r + 1 < R ? kRowGap : 0);

  // The shared bar runs from the top of the first row's cells to the
  // bottom of the last row's.
  std::optional<SharedBar> bar;
  double width = col_x[C];
  if (one_bar) {
    const double span = row_y[R - 1] + top[R - 1] + plot_h[R - 1] - top[0];
    bar = SharedBar{col_x[C - 1] + left[C - 1] + plot_w[C - 1] + kBarGap, top[0], std::max(span, kMinBarPx),
                    bar_tics(first, std::max(span, kMinBarPx), type.bar())};
    width = std::max(width, bar->x - kBarGap + bar_block(bar->tics, panels.back(), type));
  }
  // A grid narrower than its title at the smallest size on two lines (a
  // panel or two) is widened to hold it, the panels in the middle.
  PageTitle page = page_title(title, static_cast<int>(std::ceil(width)), type.tic + 7, type.tic + 2, 50);
  double shift = 0;
  if (page.width > width) {
    shift = (page.width - width) / 2;
    width = page.width;
    page = page_title(title, static_cast<int>(std::ceil(width)), type.tic + 7, type.tic + 2, 50);
  }
  for (double& x : col_x) x += shift;
  const Canvas cv{std::ceil(width), std::ceil(page.px + row_y[R])};
  if (bar) bar->x += shift, bar->y += page.px;

  std::string body = page.command;
  for (std::size_t k = 0; k < measured.size(); ++k) {
    const std::size_t c = k % C, r = k / C;
    const Place at{col_x[c] + left[c], page.px + row_y[r] + top[r], col_x[c],
                   col_x[c] + left[c] + plot_w[c] + right[c], depth[r]};
    draw_panel(body, measured[k], static_cast<int>(k), cv, at,
               k + 1 == measured.size() ? bar : std::optional<SharedBar>());
  }
  return render("heatmap_grid", png_path, static_cast<int>(cv.w), static_cast<int>(cv.h), body);
}

}  // namespace sa::plot
