// Heatmaps: one matrix as coloured cells (heatmap, weights_heatmap for
// attention weights), and a grid of them under one title (heatmap_grid).
// heatmap_panel draws one, whole figure or multiplot panel alike.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

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

// A cell's value as written in it.
std::string cell_text(float v, int decimals) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find_first_not_of("-0.") == std::string::npos && s[0] == '-') s.erase(0, 1);  // no "-0.00"
  return s;
}

// Estimates shared by heatmap_panel and heatmap_grid (which picks one
// label rotation for all its panels).

// Characters of the longest tic label on an axis of n cells (the indices
// when there are no labels).
std::size_t tic_chars(const std::vector<std::string>& labels, std::size_t n) {
  return labels.empty() ? std::to_string(n).size() : longest(labels);
}

// Pixels a tic label character takes at pt points, as wide as a digit.
double tic_char_px(double pt) { return 0.62 * pt * kPxPerPt; }

// A cell's width in a panel panel_px wide: the colour bar, axis labels
// and margins take about 200 px, the row labels ylab_chars characters, and
// the columns share the rest.
double cell_width(double panel_px, std::size_t ylab_chars, double char_px, std::size_t cols) {
  return (panel_px - 200.0 - ylab_chars * char_px) / static_cast<double>(cols);
}

// Emits one heatmap (a whole figure, or one multiplot panel) into `s`.
// width/height: the pixels this panel occupies; id: unique datablock suffix;
// base_pt: font size of tic labels (titles are a little larger).
// scale: the panel's share of the page ("1,1", or "0.25,0.47" in a grid).
// rotate: in a grid, one key-label rotation for every panel (else the panel
// decides), so that matrices of one shape draw at one size.
void heatmap_panel(std::string& s, const Heatmap& h, int id, double width, double height, double base_pt,
                   const std::string& scale_xy = "1,1", std::optional<int> rotate_labels = std::nullopt) {
  const auto rows = static_cast<std::size_t>(h.values.rows());
  const auto cols = static_cast<std::size_t>(h.values.cols());
  const ColourScale scale = heatmap_scale(h);
  const double char_px = tic_char_px(base_pt);

  // Estimate the plot area to size the cell text: tic labels, axis labels,
  // title, and the colour bar take the margins.
  const std::size_t ylab_chars = tic_chars(h.row_labels, rows);
  const std::size_t xlab_chars = tic_chars(h.col_labels, cols);
  const double est_cell_w = cell_width(width, ylab_chars, char_px, cols);
  // Rotate the key labels when they would not fit side by side.
  const double xlab_slot = est_cell_w * static_cast<double>(tic_stride(!h.col_labels.empty(), cols));
  const int rotate =
      rotate_labels ? *rotate_labels : xlab_chars * char_px > 0.9 * xlab_slot ? (cols > 24 ? 90 : 45) : 0;
  const double xlab_h = rotate ? std::min<double>(xlab_chars, 16) * char_px * (rotate == 90 ? 1.0 : 0.72) + 12 : 24;
  const double est_cell_h = (height - 110.0 - xlab_h) / static_cast<double>(rows);
  const double cell_px = std::max(1.0, std::min(est_cell_w, est_cell_h));

  // Cell text: as large as fits, never larger than the tic labels + 1 pt.
  std::vector<std::string> texts(rows * cols);
  std::size_t text_chars = 1;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      texts[i * cols + j] = cell_text(h.values(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)), h.decimals);
      text_chars = std::max(text_chars, texts[i * cols + j].size());
    }
  }
  double cell_pt = std::min({base_pt + 1.0, cell_px * 0.85 / (text_chars * 0.62 * kPxPerPt), cell_px * 0.4 / kPxPerPt});
  bool annotate = h.annotate.value_or(rows <= 12 && cols <= 12);
  if (cell_pt < 6.0) {
    if (!h.annotate) annotate = false;  // too small to read: only when asked
    cell_pt = 6.0;
  }

  // Fresh panel: clear what the previous multiplot panel set.
  s += "unset label\nunset arrow\nunset object\nunset logscale\nunset key\nunset grid\nset view map\n";
  // Tic labels take the border's colour unless told otherwise.
  s += "set border 15 lw 1 lc rgb '#808080'\nset tics scale 0 textcolor rgb '#1a1a1a'\n";
  s += "set size ratio -1 " + scale_xy + "\n";  // square cells
  // The title is centred on the square plot area; about width - 90 px fit.
  s += title_command(h.title, width - 90.0, base_pt + 3, base_pt);
  s += fmt::format("set xlabel {} font ',{}'\nset ylabel {} font ',{}'\n", gq(h.xlabel), base_pt + 1, gq(h.ylabel),
                   base_pt + 1);
  // Clear of the colour bar's tic labels, which gnuplot does not measure.
  s += fmt::format("set cblabel {} font ',{}' offset 1.5,0\n", gq(h.cblabel), base_pt);
  s += fmt::format("set xtics {} font ',{}'", tic_list(h.col_labels, cols), base_pt);
  s += rotate ? fmt::format(" rotate by {} right\n", rotate) : std::string(" norotate\n");
  s += fmt::format("set ytics {} font ',{}'\n", tic_list(h.row_labels, rows), base_pt);
  s += fmt::format("set cbtics font ',{}'\nset format cb '%g'\n", base_pt - 1);
  s += "set colorbox default vertical\n";
  // Column j at x = j, row i at y = i; the y axis runs downwards (reversed
  // range), so row 0 is at the top like a table.
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [{}:-0.5]\n", cols - 0.5, rows - 0.5);
  if (h.categories.empty()) {
    // (maxcolors 0: every shade again, should a categorical panel come before)
    s += fmt::format("set cbrange [{:.10g}:{:.10g}]\nset palette maxcolors 0\n", scale.lo, scale.hi);
    s += scale.command();
  } else {
    // n flat colours: value k sits in the middle of the k-th of n equal
    // slices of the range, and `maxcolors n` keeps gnuplot from blending.
    const std::size_t n = h.categories.size();
    s += fmt::format("set cbrange [-0.5:{}]\nset palette maxcolors {}\nset palette defined (", n - 0.5,
                     std::max<std::size_t>(n, 2));
    for (std::size_t k = 0; k < std::max<std::size_t>(n, 2); ++k)
      s += fmt::format("{}{} '{}'", k ? ", " : "", k, rgb_hex(category_rgb(h, std::min(k, n - 1))));
    s += ")\nunset colorbox\n";
    s += fmt::format("set key outside right center vertical Left reverse samplen 1.2 spacing 1.4 font ',{}'\n",
                     base_pt);
  }
  // Masked cells (NaN, +-inf) are written as NaN and not drawn; this grey
  // rectangle behind the image shows through them.
  s += fmt::format("set object 1 rectangle from -0.5,-0.5 to {},{} behind fc rgb '{}' fs solid 1.0 noborder\n",
                   cols - 0.5, rows - 0.5, kMaskedFill);
  // Thin white lines between cells, when the cells are big enough.
  if (cell_px >= 14 && rows <= 40 && cols <= 40) {
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
  if (annotate) {
    int tag = 1;
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        const float v = h.values(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
        const char* colour = !std::isfinite(v)      ? kMaskedText
                             : h.categories.empty() ? text_on(scale.at(v))
                                                    : text_on(category_rgb(h, static_cast<std::size_t>(v)));
        s += fmt::format("set label {} {} at {},{} center front tc rgb '{}' font ',{:.1f}'\n", tag++,
                         gq(texts[i * cols + j]), j, i, colour, cell_pt);
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
  // A category's legend entry: an empty series with its colour and name.
  std::string legend;
  for (std::size_t k = 0; k < h.categories.size(); ++k)
    legend += fmt::format(", NaN with boxes fs solid 1.0 lc rgb '{}' title {}", rgb_hex(category_rgb(h, k)),
                          gq(h.categories[k]));
  if (as_image) {
    s += "plot " + block + " using 1:2:3 with image notitle" + legend + "\n";
  } else {
    s += "plot " + block + " using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette notitle" +
         legend + "\n";
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
  return h;
}

std::string heatmap(const std::string& png_path, const Heatmap& h, int width, int height) {
  validate("heatmap", h);
  check_size("heatmap", width, height);
  if (!available()) return skipped();
  std::string body;
  heatmap_panel(body, h, 0, width, height, 11);
  return render("heatmap", png_path, width, height, body);
}

std::string heatmap_grid(const std::string& png_path, const std::string& title, int rows, int cols,
                         const std::vector<Heatmap>& panels, int panel_px) {
  check_grid("heatmap_grid", rows, cols, panels.size());
  for (std::size_t k = 0; k < panels.size(); ++k) {
    validate("heatmap_grid", panels[k], fmt::format("panel {}: ", k));
  }
  check_size("heatmap_grid", panel_px, panel_px);
  if (!available()) return skipped();

  // A colour-bar title written once, right of the last column (see below),
  // gets a strip of its own: gnuplot's margin does not count its offset.
  const bool bar_title = std::all_of(panels.begin(), panels.end(), [&](const Heatmap& h) {
    return h.cblabel == panels.front().cblabel && !h.cblabel.empty();
  });
  const int bar_title_px = bar_title ? 24 : 0;
  const int width = cols * panel_px + bar_title_px;
  // Smaller panels, smaller type, but never below 9 pt: labels must read at
  // 100 % (11 pt at 420 px and more).
  const double pt = std::clamp(panel_px / 38.0, 9.0, 11.0);
  const PageTitle page = page_title(title, width, pt + 7, pt + 2, 50);
  const int height = rows * panel_px + page.px;
  std::string body;
  // The panels are placed by hand (see panel_origin); the top page.px
  // pixels are left to the overall title.
  const double top = 1.0 - static_cast<double>(page.px) / height;
  const double pw = static_cast<double>(panel_px) / width, ph = top / rows;
  // One label rotation for every panel: the longest labels of any panel decide.
  std::size_t ylab_chars = 1, xlab_chars = 1, max_cols = 1;
  for (const Heatmap& h : panels) {
    const auto n_rows = static_cast<std::size_t>(h.values.rows()), n_cols = static_cast<std::size_t>(h.values.cols());
    ylab_chars = std::max(ylab_chars, tic_chars(h.row_labels, n_rows));
    xlab_chars = std::max(xlab_chars, tic_chars(h.col_labels, n_cols));
    max_cols = std::max(max_cols, n_cols);
  }
  const double char_px = tic_char_px(pt);
  const double cell_w = cell_width(panel_px, ylab_chars, char_px, max_cols);
  // Slanted labels still need about 1.6 lines of height per cell; below
  // that they overlap, and only upright ones (one line each) fit.
  const bool crowded = max_cols > 24 || cell_w < 1.6 * pt * kPxPerPt;
  const int rotate = xlab_chars * char_px > 0.9 * cell_w ? (crowded ? 90 : 45) : 0;
  // gnuplot's automatic margins follow each panel's labels: row labels
  // padded to one length (right-aligned, so only the margin changes) make
  // every panel's left margin the same.
  body += page.command;
  // An axis title every panel shares is written once, left of the first
  // column ("query") or right of the last ("weight"): between two panels it
  // would run into the neighbour's row labels. The others write a blank, so
  // every panel keeps the same margins and its cells the same size.
  auto shared = [&](std::string Heatmap::*field) {
    return std::all_of(panels.begin(), panels.end(),
                       [&](const Heatmap& h) { return h.*field == panels.front().*field; });
  };
  const bool one_ylabel = shared(&Heatmap::ylabel), one_cblabel = shared(&Heatmap::cblabel);
  for (std::size_t k = 0; k < panels.size(); ++k) {
    body += panel_origin(k, cols, pw, ph, top);
    Heatmap padded = panels[k];
    const std::size_t column = k % static_cast<std::size_t>(cols);
    if (one_ylabel && column != 0 && !padded.ylabel.empty()) padded.ylabel = " ";
    if (one_cblabel && column + 1 != static_cast<std::size_t>(cols) && !padded.cblabel.empty()) padded.cblabel = " ";
    if (padded.row_labels.empty())
      for (Eigen::Index i = 0; i < padded.values.rows(); ++i) padded.row_labels.push_back(std::to_string(i));
    for (std::string& label : padded.row_labels) label.insert(0, ylab_chars - std::min(ylab_chars, label.size()), ' ');
    heatmap_panel(body, padded, static_cast<int>(k), panel_px, panel_px, pt, fmt::format("{:.5f},{:.5f}", pw, ph),
                  rotate);
  }
  return render("heatmap_grid", png_path, width, height, body);
}

}  // namespace sa::plot
