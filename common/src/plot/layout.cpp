// Layout: estimates of how much room text takes (gnuplot does not say),
// titles fitted to the room there is, the plot area of a 2-D chart, and the
// placing of panels in a grid (heatmap grids, flow diagrams, histograms on
// their own axes).

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace sa::plot::detail {

// ---- Layout estimates -----------------------------------------------------------
//
// gnuplot lays a figure out itself and does not tell us where things ended
// up, so the decisions below (legend spot, reference-line labels, title
// size) rest on pixel estimates, measured on pngcairo (96 dpi, kPxPerPt) with
// the Sans font (DejaVu Sans) used here. They err on the generous side.

// Number of characters a UTF-8 string shows (for layout estimates).
std::size_t text_width(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::size_t longest(const std::vector<std::string>& labels) {
  std::size_t n = 0;
  for (const auto& l : labels) n = std::max(n, text_width(l));
  return n;
}

// Width in pixels of `chars` characters of text at `pt` points. Running
// text averages about 0.52 em per character; digits are wider (0.62 em).
double text_px(std::size_t chars, double pt, bool digits) {
  return static_cast<double>(chars) * pt * kPxPerPt * (digits ? 0.62 : 0.52);
}

namespace {

// Characters in the longest line of s.
std::size_t longest_line(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t start = 0; start <= s.size();) {
    const std::size_t end = std::min(s.find('\n', start), s.size());
    n = std::max(n, text_width(s.substr(start, end - start)));
    start = end + 1;
  }
  return n;
}

// A title that fits across about avail_px. gnuplot centres the title on the
// plot area (not on the canvas) and simply cuts off what runs past the
// canvas edge, so a title that is too long is first set smaller, down to
// min_pt, and then broken into two lines at the space nearest its middle.
// Returns the text and its font size.
std::pair<std::string, double> fit_title(const std::string& title, double avail_px, double pt, double min_pt) {
  const std::size_t n = longest_line(title);
  if (text_px(n, pt) <= avail_px) return {title, pt};
  const double shrunk = pt * avail_px / text_px(n, pt);
  if (shrunk >= min_pt || title.find('\n') != std::string::npos) return {title, std::max(shrunk, min_pt)};
  const std::size_t mid = title.size() / 2;
  std::size_t cut = std::string::npos;
  for (std::size_t d = 0; d <= mid && cut == std::string::npos; ++d) {
    if (mid + d < title.size() && title[mid + d] == ' ') {
      cut = mid + d;
    } else if (title[mid - d] == ' ') {
      cut = mid - d;
    }
  }
  if (cut == std::string::npos) return {title, min_pt};  // one long word: smallest size, may still be cut
  const std::string two = title.substr(0, cut) + "\n" + title.substr(cut + 1);
  const std::size_t m = longest_line(two);
  return {two, std::clamp(pt * avail_px / text_px(m, pt), min_pt, pt)};
}

}  // namespace

std::string title_command(const std::string& title, double avail_px, double pt, double min_pt) {
  const auto [text, size] = fit_title(title, avail_px, pt, min_pt);
  return fmt::format("set title {} font ',{:.3g}'\n", gq(text), size);
}

// A multiplot's overall title (fit_title: a long one is set smaller or on
// two lines). A second line needs more room above the panels: one_line_px
// is the band for one line.
PageTitle page_title(const std::string& title, int width, double pt, double min_pt, int one_line_px) {
  const auto [text, size] = fit_title(title, width - 40.0, pt, min_pt);
  const bool two_lines = text.find('\n') != std::string::npos;
  const int px = title.empty() ? 0 : two_lines ? 50 + static_cast<int>(std::lround(size * 1.6)) : one_line_px;
  return {fmt::format("set multiplot title {} font ',{:.3g}'\n", gq(text), size), px};
}

// The plot area (inside the border) of a 2-D chart, estimated: the y tic
// labels and ylabel take about 90 px on the left, the last x tic label
// about 30 px on the right; the title about 57 px on top, tic labels and
// xlabel about 60 px at the bottom.
Frame chart_frame(int width, int height, bool has_title, bool has_xlabel) {
  return {std::max(width - 120.0, 50.0),
          std::max(height - (has_title ? 57.0 : 25.0) - (has_xlabel ? 60.0 : 40.0), 50.0)};
}

// ---- Panel grids ------------------------------------------------------------------

void check_grid(std::string_view fn, int rows, int cols, std::size_t panels) {
  if (rows <= 0 || cols <= 0) bad_input(fn, fmt::format("grid {} x {} must have positive size", rows, cols));
  if (panels != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols)) {
    bad_input(fn, fmt::format("{} panels for a {} x {} grid (need {})", panels, rows, cols, rows * cols));
  }
}

// Panels are placed by hand (set origin / set size, in screen fractions)
// rather than with `set multiplot layout`: the layout's `margins` option
// would force the same plot-area margins on every panel, and resetting
// them makes every panel fill the whole page. Above `top` is the band of
// the overall title.
std::string panel_origin(std::size_t k, int cols, double pw, double ph, double top) {
  const auto r = static_cast<int>(k) / cols, c = static_cast<int>(k) % cols;
  return fmt::format("set origin {:.5f},{:.5f}\n", c * pw, top - (r + 1) * ph);
}

}  // namespace sa::plot::detail
