// sa::plot's internals: what the files under common/src/plot/ share. Not
// part of the public API (that is sa/plot.hpp) and not installed.
//
// How it works. Each function validates its input (std::invalid_argument),
// writes one complete gnuplot script into a std::string -- the data inline as
// datablocks ($name << EOD ... EOD) that we format ourselves -- and pipes that
// script to one gnuplot process. Destroying the Gnuplot object pclose()s the
// pipe, which waits for gnuplot to exit, so the PNG is finished when the
// function returns; then we check the file really is a complete PNG.
//
// Gnuplot traps handled here (each is commented where it matters):
//  * Strings: inside "double quotes" gnuplot runs `backquoted` text as a
//    shell command and interprets backslashes, so every user string (titles,
//    token labels) goes in 'single quotes', where only '' is special (gq).
//  * Enhanced text would turn "d_k" into d subscript k and "x^2" into a
//    superscript: the terminal is `noenhanced`, text is printed literally.
//  * Data: the 2014 gnuplot-iostream has no Eigen adaptor and its send2d into
//    `plot '-' matrix with image` draws nothing, so we format the numbers
//    ourselves into datablocks. A datablock, unlike '-', can be read by
//    several plot clauses. Non-finite values are written as NaN, which gnuplot
//    reads as "undefined" (it does not parse "-inf" reliably).
//  * `with image` needs a grid of at least 2 x 2 points, so 1 x n and n x 1
//    heatmaps are drawn as boxes instead (heatmap.cpp).
//  * A gnuplot error does not stop gnuplot when it reads a pipe: it prints the
//    error, carries on, and exits with status 1. We redirect its output to a
//    log file, mark a non-zero exit in that log, and turn it into one line of
//    std::runtime_error. (The shell `||` also keeps pclose() at 0, so the
//    gnuplot-iostream destructor does not print "pclose returned error".)
//  * The PNG is only complete once gnuplot has closed it: the script ends with
//    `unset output`, and pclose() waits for gnuplot to exit.
//  * `gnuplot -d` ignores the user's ~/.gnuplot so figures look the same on
//    every machine.
//  * Layout (layout.cpp, axes.cpp, chart.cpp): gnuplot centres the title on
//    the plot area, not the canvas, and cuts off what runs past the edge, so
//    the legend never goes outside on the right (that shifts the plot area
//    left) and long titles are shrunk or wrapped. Ranges are set explicitly,
//    never autoscaled with `set offsets` (which also moved a given ymin: a
//    chart asking for ymin = 0 got its 0 tic lifted off the axis), so we know
//    the range drawn when placing the legend. Log axes get explicit tics,
//    since gnuplot labels only whole decades and a range inside one decade
//    got one labelled tic or none.
//  * Heatmaps (heatmap.cpp) are laid out by us to the pixel: gnuplot sizes
//    margins before it knows how far rotated tic labels reach, then applies
//    `set size ratio`, and squeezed the cells. Their margins are measured
//    from the text (label_px) and set `at screen`; titles, axis titles and
//    the colour bar are placed the same way.
//  * Front arrows are drawn after front labels, so a `set arrow` would
//    strike through any label; reference lines are plot elements instead.
//
// Debugging: with the environment variable SA_PLOT_KEEP_SCRIPT set, the
// script of each figure is also written next to it as <png>.gp, so
// `gnuplot <png>.gp` redraws it.
//
// The files, by concern:
//   gnuplot.cpp    the gnuplot process: errors, script text (quoting, numbers,
//                  datablocks), finding gnuplot, running a script to a PNG
//   colour.cpp     palettes, the line colour cycle, value -> colour scales
//   layout.cpp     text size estimates, titles, the plot area, panel grids
//   axes.cpp       tic lists (category and log axes) and axis ranges
//   chart.cpp      what the 2-D charts share: their look, series checks, the
//                  legend and its placement, reference lines and their labels
//   heatmap.cpp, lines.cpp, bars.cpp, histogram.cpp, surface.cpp, flow.cpp,
//   diagram.cpp:
//                  one kind of figure each (the public functions)
#pragma once

#include "sa/plot.hpp"

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sa::plot::detail {

// ---- Errors (gnuplot.cpp) ----------------------------------------------------

// std::invalid_argument "sa::plot::<fn>: <what>": bad input, found before
// gnuplot is started.
[[noreturn]] void bad_input(std::string_view fn, const std::string& what);
void check_size(std::string_view fn, int width, int height);

// ---- Script text (gnuplot.cpp) -------------------------------------------------

// A gnuplot string literal holding `s` verbatim, in single quotes; newlines
// are kept unless multiline is false (tic labels stay on one line).
std::string gq(std::string_view s, bool multiline = true);
// A number in a datablock (NaN for non-finite values).
std::string num(double v);
// Appends `name << EOD`, the rows, `EOD` to the script.
void datablock(std::string& script, const std::string& name, const std::string& rows);

// ---- Running gnuplot (gnuplot.cpp) ---------------------------------------------

// Returns "" after saying once, on stderr, why figures are skipped.
std::string skipped();
// Draws `body` (everything after the terminal and output are set) into
// png_path and returns png_path once the file is complete.
std::string render(std::string_view fn, const std::string& png_path, int width, int height,
                   const std::string& body);

// ---- Colours (colour.cpp) --------------------------------------------------------

struct Rgb {
  double r, g, b;  // 0..1, sRGB
};

std::string rgb_hex(Rgb c);  // "#rrggbb"

// Evenly spaced colour stops; colours between stops are interpolated
// linearly in RGB, which is also what `set palette defined` does.
using Stops = std::vector<Rgb>;

const Stops& blues();           // sequential white -> dark blue
const Stops& blue_white_red();  // diverging, white in the middle
const Stops& viridis();         // for surfaces: no white end
Rgb interpolate(const Stops& stops, double u);  // u in 0..1

// Line and bar colour i (the "tab10" cycle).
const char* cycle_colour(std::size_t i);
Rgb cycle_rgb(std::size_t i);

inline constexpr const char* kMaskedFill = "#d4d4d4";  // NaN / inf cells
inline constexpr const char* kMaskedText = "#4d4d4d";

// Values written on cells and bars are left out rather than set smaller
// than this: below it they are hard to read and run into each other.
inline constexpr double kMinValuePt = 8.5;

// Text colour (white or near-black) that reads best on a cell of colour c.
const char* text_on(Rgb c);

// The smallest and largest finite value of m; 0 and 1 when there is none
// (everything masked).
std::pair<double, double> finite_range(const Matrix& m);

// Maps a value to a colour, the same way in C++ (for the annotation text
// colour) and in gnuplot (the palette command, in colour-bar units).
struct ColourScale {
  const Stops* stops;
  double lo, hi;
  bool diverging;  // white at value 0, even when [lo, hi] is not symmetric

  double position(double v) const;  // 0..1 along the stops
  Rgb at(double v) const;
  std::string command() const;  // `set palette defined (...)` + newline
};

// ---- Layout (layout.cpp) -----------------------------------------------------------

inline constexpr double kPxPerPt = 96.0 / 72.0;  // pngcairo lays text out at 96 dpi

// Number of characters a UTF-8 string shows (for layout estimates).
std::size_t text_width(std::string_view s);
std::size_t longest(const std::vector<std::string>& labels);
// A label of more than max_chars characters with its middle replaced by
// "…", so that at most max_chars show: its start and its end (a trailing
// " (3)" index) stay. For labels a figure places by a fixed measure (a bar
// category, a flow diagram's token, a surface's tic), where one word of 64
// letters would otherwise push the plot into a corner or run over its
// neighbours; the program's text output has the word whole.
std::string shorten(std::string_view label, std::size_t max_chars);
// Width in pixels of `chars` characters of text at `pt` points.
double text_px(std::size_t chars, double pt, bool digits = false);
// Width in pixels of the text s at `pt` points, measured with the font's
// own character widths (for tic labels, where an average would clip or pad).
double label_px(std::string_view s, double pt);
// Pixels of the widest line of s: measured with label_px when exact, else
// estimated with text_px.
double widest_line_px(std::string_view s, double pt, bool exact);

// A title fitted to about avail_px: set smaller, down to min_pt, then on
// two lines ('\n'). Returns the text and its size. Its width is estimated
// from the number of characters, or measured with label_px when exact.
std::pair<std::string, double> fit_title(const std::string& title, double avail_px, double pt, double min_pt,
                                         bool exact = false);

// `set title ...` for a title that fits across about avail_px: set smaller,
// down to min_pt, then on two lines.
std::string title_command(const std::string& title, double avail_px, double pt, double min_pt);

// A multiplot's overall title above a grid of panels, fitted like a title.
struct PageTitle {
  std::string command;  // `set multiplot title ...` + newline
  int px;               // the band above the panels it needs
  int width;            // the width it needs (wider than the canvas: it is cut at the edges)
};
PageTitle page_title(const std::string& title, int width, double pt, double min_pt, int one_line_px);

// The plot area (inside the border) of a 2-D chart, estimated.
struct Frame {
  double w, h;  // pixels
};
Frame chart_frame(int width, int height, bool has_title, bool has_xlabel);

// Refuses a grid that is not at least 1 x 1 or does not hold exactly
// `panels` panels.
void check_grid(std::string_view fn, int rows, int cols, std::size_t panels);
// `set origin` of panel k (row-major) in a grid of pw x ph panels whose top
// edge is at `top` (screen fractions).
std::string panel_origin(std::size_t k, int cols, double pw, double ph, double top);

// ---- Axes (axes.cpp) -----------------------------------------------------------------

// Which of n tics to label: every stride-th.
std::size_t tic_stride(bool have_labels, std::size_t n, std::size_t max_shown = 40);
// Explicit tic labels `('the' 0, 'cat' 1, ...)` at 0..n-1, or the indices.
std::string tic_list(const std::vector<std::string>& labels, std::size_t n, std::size_t max_shown = 40);

// A drawn axis range, and the map from data values to gnuplot's `graph`
// coordinates (0 at the left/bottom border, 1 at the right/top one). We set
// every range of a chart ourselves rather than leave it to autoscale, so the
// legend and label placement know the range actually drawn.
struct Axis {
  double lo, hi;  // data units; both > 0 on a log axis
  bool log;

  double t(double v) const { return log ? std::log10(v) : v; }
  double frac(double v) const { return (t(v) - t(lo)) / (t(hi) - t(lo)); }
  std::string range() const;  // `[lo:hi]`
};

// The range to draw for data spanning lo..hi, with `air` beyond the data
// at each end that is not given.
Axis padded_axis(double lo, double hi, bool log, double air, std::optional<double> given_lo = {},
                 std::optional<double> given_hi = {});
// Explicit tics for a log axis, `(label value, ...)`.
std::string log_tics(const Axis& a);
// Tics at each power of two when every x is one, else "".
std::string power_of_two_tics(const std::vector<Series>& series);

// ---- 2-D charts: lines, bars, histograms (chart.cpp) ---------------------------------

// Their common look: light grid behind, axes on two sides, the legend style.
extern const char* const kChartStyle;

// A series has points, and as many y values as x values when need_y.
void validate_series(std::string_view fn, const Series& se, std::size_t index, bool need_y);
// RefLine values must be finite (and positive on a log axis).
void validate_hlines(std::string_view fn, const std::vector<RefLine>& hlines, bool logy);
// A plot clause's legend entry: `title '...'`, or `notitle` for no name.
std::string title_clause(const std::string& name);

struct Box {
  double x0, y0, x1, y1;  // graph coordinates

  bool contains(double u, double v) const { return u >= x0 && u <= x1 && v >= y0 && v <= y1; }
  bool overlaps(const Box& b) const { return x0 < b.x1 && b.x0 < x1 && y0 < b.y1 && b.y0 < y1; }
  bool inside_frame() const { return x0 >= 0 && y0 >= 0 && x1 <= 1 && y1 <= 1; }
};

// What the legend or a label could cover, in graph coordinates.
class Occupancy {
 public:
  void point(double u, double v);
  void segment(double u0, double v0, double u1, double v1);
  void box(const Box& b);
  // How much of what is recorded lies in b (a box counts as many points).
  std::size_t count(const Box& b) const;

 private:
  std::vector<std::pair<double, double>> pts_;
  std::vector<Box> boxes_;
};

// Records a series' points and the lines between them.
void occupy_series(Occupancy& occ, const Series& se, const Axis& xa, const Axis& ya);

struct KeySize {
  double w, h;  // pixels
};
// The legend's size, estimated, for these entries.
KeySize key_size(const std::vector<std::string>& names);
// `set key` arguments: a free spot inside the plot, else under it.
std::string key_place(const Occupancy& occ, Frame f, KeySize key);

// A reference line's plot clause (see chart.cpp for why it is one).
std::string refline_clause(double y);
// The labels of reference lines: their style and size, and the textbox
// style that makes their box opaque.
inline constexpr const char* kRefLabelStyle = "boxed tc rgb '#404040' font ',10' front";
inline constexpr const char* kTextboxStyle = "set style textbox opaque noborder margins 1,1\n";
inline constexpr double kRefLabelPt = 10;

struct LabelSpot {
  std::string at;  // `at ... offset ...` for `set label`
  Box box;
};
// Where the label of a reference line at graph height v goes: at the right
// or left end, above or below the line.
LabelSpot refline_label_spot(const std::string& label, double y, double v, Frame f, bool right, bool above);
// The first of those spots that is free (else the least busy).
LabelSpot place_refline_label(const Occupancy& occ, const std::string& label, double y, double v, Frame f);

}  // namespace sa::plot::detail
