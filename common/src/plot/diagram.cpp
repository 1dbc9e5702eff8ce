// Block diagrams (sa::plot::diagram): boxes on a grid, arrows from box to
// box with their labels sitting on them, and a legend band for the box
// colours.
//
// Everything is placed in pixels: the plot area is the whole canvas, with
// ranges [0:width] and [0:height], so one unit is one pixel. The layout
// below measures y downwards from the top, as one reads the figure, and the
// script flips it (gnuplot's y goes up).
//
// gnuplot places none of this itself, so overlaps are ours to avoid. The
// layout starts with small gaps between the columns and rows and, while a
// label covers a box, another label or another arrow, or hides so much of
// its own arrow that no line shows at one end, widens the gaps between the
// two things that collide and lays out again.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <utility>

namespace sa::plot {

using namespace detail;

namespace {

constexpr double kNamePt = 12;   // a box's name, bold
constexpr double kLinePt = 10;   // the lines under it
constexpr double kLabelPt = 10;  // arrow labels
constexpr double kPad = 9;       // inside a box, around its text
constexpr double kStub = 16;     // arrow left showing at each end of its label
constexpr double kClear = 5;     // what a label keeps clear of around it
constexpr double kMargin = 24;   // from the canvas edge to the outermost boxes
constexpr double kGrow = 6;      // how much a gap widens per round of the layout
constexpr int kRounds = 400;     // enough to widen a gap by 2400 px

double line_px(double pt) { return pt * kPxPerPt * 1.3; }
// Names are bold, a little wider than text_px's estimate of regular text.
double bold_px(const std::string& s, double pt) { return 1.08 * text_px(text_width(s), pt, true); }
double plain_px(const std::string& s, double pt) { return text_px(text_width(s), pt, true); }

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t end; (end = s.find('\n', start)) != std::string::npos; start = end + 1)
    out.push_back(s.substr(start, end - start));
  out.push_back(s.substr(start));
  return out;
}

struct Point {
  double x, y;
};

struct Rect {
  double x0, y0, x1, y1;  // pixels, y down

  Point centre() const { return {(x0 + x1) / 2, (y0 + y1) / 2}; }
  Rect grown(double m) const { return {x0 - m, y0 - m, x1 + m, y1 + m}; }
  bool overlaps(const Rect& r) const { return x0 < r.x1 && r.x0 < x1 && y0 < r.y1 && r.y0 < y1; }
};

// The part of the segment a -> b inside r, as parameters t0 < t1 along it
// (Liang-Barsky clipping), or nothing when the segment misses r.
std::optional<std::pair<double, double>> clip(Point a, Point b, const Rect& r) {
  double t0 = 0, t1 = 1;
  const double d[2] = {b.x - a.x, b.y - a.y};
  const double lo[2] = {r.x0 - a.x, r.y0 - a.y}, hi[2] = {r.x1 - a.x, r.y1 - a.y};
  for (int k = 0; k < 2; ++k) {
    if (d[k] == 0) {
      if (lo[k] > 0 || hi[k] < 0) return std::nullopt;
      continue;
    }
    double u = lo[k] / d[k], v = hi[k] / d[k];
    if (u > v) std::swap(u, v);
    t0 = std::max(t0, u);
    t1 = std::min(t1, v);
    if (t0 >= t1) return std::nullopt;
  }
  return std::make_pair(t0, t1);
}

// Where the line from r's centre towards p leaves r.
Point border_point(const Rect& r, Point p) {
  const Point c = r.centre();
  const double dx = p.x - c.x, dy = p.y - c.y;
  const double inf = std::numeric_limits<double>::infinity();
  const double t = std::min(dx != 0 ? (r.x1 - r.x0) / 2 / std::abs(dx) : inf,
                            dy != 0 ? (r.y1 - r.y0) / 2 / std::abs(dy) : inf);
  return {c.x + t * dx, c.y + t * dy};
}

struct Size {
  double w, h;
};

Size box_size(const DiagramBox& b) {
  double w = bold_px(b.name, kNamePt);
  for (const auto& l : b.lines) w = std::max(w, plain_px(l, kLinePt));
  return {w + 2 * kPad, line_px(kNamePt) + static_cast<double>(b.lines.size()) * line_px(kLinePt) + 2 * kPad};
}

// The label's opaque box, a little larger than its text.
Size label_size(const std::string& label) {
  double w = 0;
  const auto lines = split_lines(label);
  for (const auto& l : lines) w = std::max(w, plain_px(l, kLabelPt));
  return {w + 6, static_cast<double>(lines.size()) * line_px(kLabelPt) + 4};
}

struct Placed {
  Point a, b;   // the arrow, from border to border
  Rect label;   // where its label goes (empty label: a point at the middle)
  bool labelled;
};

struct Layout {
  double w = 0, h = 0;  // the grid's extent, from (0, 0)
  std::vector<Rect> boxes;
  std::vector<Placed> arrows;
};

struct Grid {
  std::vector<double> col_w, row_h, col_gap, row_gap;
};

Layout place(const Diagram& d, const std::vector<Size>& sizes, const Grid& g) {
  std::vector<double> left(g.col_w.size()), top(g.row_h.size());
  double x = 0, y = 0;
  for (std::size_t c = 0; c < g.col_w.size(); ++c) {
    left[c] = x;
    x += g.col_w[c] + (c < g.col_gap.size() ? g.col_gap[c] : 0);
  }
  for (std::size_t r = 0; r < g.row_h.size(); ++r) {
    top[r] = y;
    y += g.row_h[r] + (r < g.row_gap.size() ? g.row_gap[r] : 0);
  }
  Layout l;
  l.w = x;
  l.h = y;
  for (std::size_t k = 0; k < d.boxes.size(); ++k) {
    const auto c = static_cast<std::size_t>(d.boxes[k].column), r = static_cast<std::size_t>(d.boxes[k].row);
    const double cx = left[c] + g.col_w[c] / 2, cy = top[r] + g.row_h[r] / 2;
    l.boxes.push_back({cx - sizes[k].w / 2, cy - sizes[k].h / 2, cx + sizes[k].w / 2, cy + sizes[k].h / 2});
  }
  for (const DiagramArrow& a : d.arrows) {
    // A little air between a box's border and the arrow's tail or head.
    const Rect from = l.boxes[a.from].grown(3), to = l.boxes[a.to].grown(3);
    Placed p{border_point(from, to.centre()), border_point(to, from.centre()), {}, !a.label.empty()};
    const Point m{(p.a.x + p.b.x) / 2, (p.a.y + p.b.y) / 2};
    const Size s = a.label.empty() ? Size{0, 0} : label_size(a.label);
    p.label = {m.x - s.w / 2, m.y - s.h / 2, m.x + s.w / 2, m.y + s.h / 2};
    l.arrows.push_back(p);
  }
  return l;
}

// The cells things occupy, to know which gaps lie between two of them.
struct Span {
  int c0, c1, r0, r1;

  Span with(const Span& s) const {
    return {std::min(c0, s.c0), std::max(c1, s.c1), std::min(r0, s.r0), std::max(r1, s.r1)};
  }
};

Span cell(const DiagramBox& b) { return {b.column, b.column, b.row, b.row}; }
Span span(const Diagram& d, const DiagramArrow& a) { return cell(d.boxes[a.from]).with(cell(d.boxes[a.to])); }

// One round: the spans whose gaps must widen (empty when all is clear).
std::vector<Span> collisions(const Diagram& d, const Layout& l) {
  std::vector<Span> out;
  const std::size_t n = d.arrows.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Placed& p = l.arrows[i];
    const Span si = span(d, d.arrows[i]);
    const double len = std::hypot(p.b.x - p.a.x, p.b.y - p.a.y);
    if (!p.labelled) {
      if (len < 2 * kStub) out.push_back(si);  // too short to see its direction
      continue;
    }
    // Some of its own arrow must show at both ends of the label.
    const auto inside = clip(p.a, p.b, p.label);
    if (!inside || inside->first * len < kStub || (1 - inside->second) * len < kStub) out.push_back(si);
    const Rect around = p.label.grown(kClear);
    for (std::size_t k = 0; k < d.boxes.size(); ++k)
      if (around.overlaps(l.boxes[k])) out.push_back(si.with(cell(d.boxes[k])));
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const Placed& q = l.arrows[j];
      const bool hits_label = q.labelled && j > i && around.overlaps(q.label);
      // Arrows that share a box meet there, which is not a collision; the
      // label must still keep off their lines.
      if (hits_label || clip(q.a, q.b, around)) out.push_back(si.with(span(d, d.arrows[j])));
    }
  }
  return out;
}

void widen(Grid& g, const Span& s) {
  for (int c = s.c0; c < s.c1; ++c) g.col_gap[static_cast<std::size_t>(c)] += kGrow;
  for (int r = s.r0; r < s.r1; ++r) g.row_gap[static_cast<std::size_t>(r)] += kGrow;
}

void validate(const Diagram& d) {
  if (d.boxes.empty()) bad_input("diagram", "no boxes");
  std::set<std::pair<int, int>> cells;
  for (std::size_t k = 0; k < d.boxes.size(); ++k) {
    const DiagramBox& b = d.boxes[k];
    if (b.column < 0 || b.row < 0 || b.column > 50 || b.row > 50) {
      bad_input("diagram", fmt::format("box {} ('{}') at column {}, row {}: both must be in 0..50", k, b.name,
                                       b.column, b.row));
    }
    if (!cells.insert({b.column, b.row}).second) {
      bad_input("diagram", fmt::format("box {} ('{}') shares column {}, row {} with another box", k, b.name,
                                       b.column, b.row));
    }
  }
  for (std::size_t i = 0; i < d.arrows.size(); ++i) {
    const DiagramArrow& a = d.arrows[i];
    if (a.from >= d.boxes.size() || a.to >= d.boxes.size()) {
      bad_input("diagram", fmt::format("arrow {} ('{}') goes from box {} to box {}, but there are {} boxes", i,
                                       a.label, a.from, a.to, d.boxes.size()));
    }
    if (a.from == a.to) {
      bad_input("diagram", fmt::format("arrow {} ('{}') goes from box {} to itself", i, a.label, a.from));
    }
  }
}

}  // namespace

std::string diagram(const std::string& png_path, const Diagram& d) {
  validate(d);

  Grid g;
  std::vector<Size> sizes;
  for (const DiagramBox& b : d.boxes) {
    const auto c = static_cast<std::size_t>(b.column), r = static_cast<std::size_t>(b.row);
    if (c >= g.col_w.size()) g.col_w.resize(c + 1, 0);
    if (r >= g.row_h.size()) g.row_h.resize(r + 1, 0);
    sizes.push_back(box_size(b));
    g.col_w[c] = std::max(g.col_w[c], sizes.back().w);
    g.row_h[r] = std::max(g.row_h[r], sizes.back().h);
  }
  g.col_gap.assign(g.col_w.size() - 1, 40);
  g.row_gap.assign(g.row_h.size() - 1, 30);

  Layout l = place(d, sizes, g);
  for (int round = 0;; ++round) {
    const auto spans = collisions(d, l);
    if (spans.empty()) break;
    if (round == kRounds) bad_input("diagram", "the arrow labels cannot be placed without overlaps");
    for (const Span& s : spans) widen(g, s);
    l = place(d, sizes, g);
  }
  for (std::size_t i = 0; i < d.arrows.size(); ++i) {
    const DiagramArrow& a = d.arrows[i];
    for (std::size_t k = 0; k < d.boxes.size(); ++k) {
      if (k == a.from || k == a.to || !clip(l.arrows[i].a, l.arrows[i].b, l.boxes[k].grown(2))) continue;
      bad_input("diagram", fmt::format("arrow {} ('{}', from '{}' to '{}') would pass through box '{}'", i, a.label,
                                       d.boxes[a.from].name, d.boxes[a.to].name, d.boxes[k].name));
    }
  }

  if (!available()) return skipped();

  // The legend: a swatch and its text per entry, in one line when they fit.
  const double swatch = 24, entry_gap = 28;
  std::vector<double> entry_w;
  double legend_line = 0;
  for (const auto& e : d.legend) {
    entry_w.push_back(swatch + 8 + plain_px(e, kLinePt + 1));
    legend_line += entry_w.back() + (entry_w.size() > 1 ? entry_gap : 0);
  }
  const double legend_row = 24;
  const int width = static_cast<int>(std::ceil(std::max({l.w + 2 * kMargin, 480.0, legend_line + 2 * kMargin})));
  const bool one_line = legend_line + 2 * kMargin <= width;
  const double legend_rows = one_line ? 1 : static_cast<double>(d.legend.size());
  const double legend_px = d.legend.empty() ? 0 : legend_rows * legend_row + 14;
  const PageTitle page = page_title(d.title, width, 15, 11, 50);
  const double top = d.title.empty() ? kMargin : page.px;
  const int height = static_cast<int>(std::ceil(top + l.h + kMargin + legend_px));
  const double x_off = (width - l.w) / 2;
  // Pixel coordinates for gnuplot: shifted into place, y flipped.
  auto at = [&](double x, double y) { return fmt::format("{:.1f},{:.1f}", x_off + x, height - (top + y)); };

  std::string s = page.command;
  s += "unset border\nunset tics\nunset key\n";
  s += "set lmargin at screen 0\nset rmargin at screen 1\nset bmargin at screen 0\nset tmargin at screen 1\n";
  s += fmt::format("set xrange [0:{}]\nset yrange [0:{}]\n", width, height);
  s += kTextboxStyle;
  int object = 1, label = 1, arrow = 1;
  for (std::size_t k = 0; k < d.boxes.size(); ++k) {
    const DiagramBox& b = d.boxes[k];
    const Rect& r = l.boxes[k];
    const Rgb edge = cycle_rgb(b.colour);
    const Rgb fill = interpolate({{1, 1, 1}, edge}, 0.14);
    s += fmt::format("set object {} rect from {} to {} fc rgb '{}' fs solid 1.0 border lc rgb '{}' lw 1.5 back\n",
                     object++, at(r.x0, r.y1), at(r.x1, r.y0), rgb_hex(fill), rgb_hex(edge));
    double y = r.y0 + kPad + line_px(kNamePt) / 2;
    s += fmt::format("set label {} {} at {} center font 'Sans:Bold,{}' tc rgb '#1a1a1a' front\n", label++,
                     gq(b.name, false), at(r.centre().x, y), kNamePt);
    y += line_px(kNamePt) / 2;
    for (const auto& line : b.lines) {
      s += fmt::format("set label {} {} at {} center font ',{}' tc rgb '#404040' front\n", label++, gq(line, false),
                       at(r.centre().x, y + line_px(kLinePt) / 2), kLinePt);
      y += line_px(kLinePt);
    }
  }
  // Arrows behind the labels, so that a label's opaque box covers its line.
  for (std::size_t i = 0; i < d.arrows.size(); ++i) {
    const Placed& p = l.arrows[i];
    s += fmt::format("set arrow {} from {} to {} head filled size 9,22 lw 1.4 lc rgb '#505050' back\n", arrow++,
                     at(p.a.x, p.a.y), at(p.b.x, p.b.y));
    if (!p.labelled) continue;
    // Line by line, each label centred on its own line's place: gnuplot's
    // own vertical placement of a multi-line label is not centred.
    const auto lines = split_lines(d.arrows[i].label);
    double y = p.label.centre().y - static_cast<double>(lines.size()) * line_px(kLabelPt) / 2;
    for (const auto& line : lines) {
      s += fmt::format("set label {} {} at {} center font ',{}' tc rgb '#303030' boxed front\n", label++,
                       gq(line, false), at(p.label.centre().x, y + line_px(kLabelPt) / 2), kLabelPt);
      y += line_px(kLabelPt);
    }
  }
  // The legend band, centred under the diagram (in the grid's coordinates,
  // like everything `at` places).
  const double legend_top = l.h + kMargin;
  const double widest = entry_w.empty() ? 0 : *std::max_element(entry_w.begin(), entry_w.end());
  double lx = (width - (one_line ? legend_line : widest)) / 2 - x_off;
  for (std::size_t k = 0; k < d.legend.size(); ++k) {
    const double ly = legend_top + (one_line ? 0 : static_cast<double>(k) * legend_row) + legend_row / 2;
    const Rgb edge = cycle_rgb(k);
    s += fmt::format("set object {} rect from {} to {} fc rgb '{}' fs solid 1.0 border lc rgb '{}' lw 1.5 back\n",
                     object++, at(lx, ly + 7), at(lx + swatch, ly - 7),
                     rgb_hex(interpolate({{1, 1, 1}, edge}, 0.14)), rgb_hex(edge));
    s += fmt::format("set label {} {} at {} left font ',{}' tc rgb '#404040' front\n", label++, gq(d.legend[k], false),
                     at(lx + swatch + 8, ly), kLinePt + 1);
    if (one_line) lx += entry_w[k] + entry_gap;
  }
  s += "plot NaN notitle\n";
  return render("diagram", png_path, width, height, s);
}

}  // namespace sa::plot
