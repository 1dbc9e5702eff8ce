// Layout: estimates of how much room text takes (gnuplot does not say),
// titles fitted to the room there is, the plot area of a 2-D chart, and the
// placing of panels in a grid (heatmap grids, flow diagrams, histograms on
// their own axes).

#include "detail.hpp"

#include "sa/printable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace sa::plot::detail {

// ---- Layout estimates -----------------------------------------------------------
//
// gnuplot lays a figure out itself and does not tell us where things ended
// up, so the decisions below (legend spot, reference-line labels, title
// size) rest on pixel estimates, measured on pngcairo (96 dpi, kPxPerPt) with
// the Sans font (DejaVu Sans) used here. They err on the generous side.

// Number of characters a UTF-8 string shows (for layout estimates).
std::size_t text_width(std::string_view s) { return utf8_length(s); }

std::size_t longest(const std::vector<std::string>& labels) {
  std::size_t n = 0;
  for (const auto& l : labels) n = std::max(n, text_width(l));
  return n;
}

std::string shorten(std::string_view label, std::size_t max_chars) {
  const std::size_t n = text_width(label);
  if (n <= max_chars || max_chars < 3) return std::string(label);
  // The end keeps the larger half: there sits the index of "word (12)".
  const std::size_t head = (max_chars - 1) / 2, tail = max_chars - 1 - head;
  return std::string(label.substr(0, utf8_offset(label, head))) + "…" +
         std::string(label.substr(utf8_offset(label, n - tail)));
}

// Width in pixels of `chars` characters of text at `pt` points. Running
// text averages about 0.52 em per character; digits are wider (0.62 em).
double text_px(std::size_t chars, double pt, bool digits) {
  return static_cast<double>(chars) * pt * kPxPerPt * (digits ? 0.62 : 0.52);
}

namespace {

// Advance widths of DejaVu Sans (the Sans of pngcairo), in em, of the
// printable ASCII characters ' ' to '~', read from the font's hmtx table.
constexpr std::array<double, 95> kAsciiEm = {
    0.318, 0.401, 0.460, 0.838, 0.636, 0.950, 0.780, 0.275, 0.390, 0.390, 0.500, 0.838, 0.318, 0.361, 0.318, 0.337,
    0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.337, 0.337, 0.838, 0.838, 0.838, 0.531,
    1.000, 0.684, 0.686, 0.698, 0.770, 0.632, 0.575, 0.775, 0.752, 0.295, 0.295, 0.656, 0.557, 0.863, 0.748, 0.787,
    0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685, 0.390, 0.337, 0.390, 0.838, 0.500,
    0.500, 0.613, 0.635, 0.550, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974, 0.634, 0.612,
    0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, 0.636, 0.337, 0.636, 0.838};

}  // namespace

// Width in pixels of `s` set at `pt` points: the font's own widths for
// ASCII, 0.8 em for anything else (accented letters, symbols such as ␣ and
// ×), which errs on the wide side. Tic labels sized with this get margins
// that fit them, neither clipped nor padded with half a label of air.
double label_px(std::string_view s, double pt) {
  double em = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      em += kAsciiEm[c - 0x20];
    } else if ((c & 0xC0) != 0x80) {  // the first byte of a multi-byte character
      em += 0.8;
    }
  }
  return em * pt * kPxPerPt;
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

}  // namespace

// Pixels of the widest line of s at pt points: measured (label_px) when
// exact, else estimated from its characters (text_px) but never below the
// measure: a title quoting a word of 64 x's (0.59 em each, not the 0.52 of
// running text) was estimated to fit and ran past the canvas edge.
double widest_line_px(std::string_view s, double pt, bool exact) {
  double w = 0;
  for (std::size_t start = 0; start <= s.size();) {
    const std::size_t end = std::min(s.find('\n', start), s.size());
    w = std::max(w, label_px(s.substr(start, end - start), pt));
    start = end + 1;
  }
  return exact ? w : std::max(w, text_px(longest_line(s), pt));
}

// A title that fits across about avail_px. gnuplot centres the title on the
// plot area (not on the canvas) and simply cuts off what runs past the
// canvas edge, so a title that is too long is first set smaller, down to
// min_pt, and then broken into two lines at the space nearest its middle.
// Returns the text and its font size.
std::pair<std::string, double> fit_title(const std::string& title, double avail_px, double pt, double min_pt,
                                         bool exact) {
  const double w = widest_line_px(title, pt, exact);
  if (w <= avail_px) return {title, pt};
  const double shrunk = pt * avail_px / w;
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
  return {two, std::clamp(pt * avail_px / widest_line_px(two, pt, exact), min_pt, pt)};
}

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
  return {fmt::format("set multiplot title {} font ',{:.3g}'\n", gq(text), size), px,
          title.empty() ? 0 : static_cast<int>(std::ceil(widest_line_px(text, size, false))) + 40};
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
