// sa::plot: book figures as PNG files, drawn by gnuplot (pngcairo terminal)
// through a gnuplot-iostream pipe.
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
//    token labels) goes in 'single quotes', where only '' is special.
//  * Enhanced text would turn "d_k" into d subscript k and "x^2" into a
//    superscript: the terminal is `noenhanced`, text is printed literally.
//  * Data: the 2014 gnuplot-iostream has no Eigen adaptor and its send2d into
//    `plot '-' matrix with image` draws nothing, so we format the numbers
//    ourselves into datablocks. A datablock, unlike '-', can be read by
//    several plot clauses. Non-finite values are written as NaN, which gnuplot
//    reads as "undefined" (it does not parse "-inf" reliably).
//  * `with image` needs a grid of at least 2 x 2 points, so 1 x n and n x 1
//    heatmaps are drawn as boxes instead.
//  * A gnuplot error does not stop gnuplot when it reads a pipe: it prints the
//    error, carries on, and exits with status 1. We redirect its output to a
//    log file, mark a non-zero exit in that log, and turn it into one line of
//    std::runtime_error. (The shell `||` also keeps pclose() at 0, so the
//    gnuplot-iostream destructor does not print "pclose returned error".)
//  * The PNG is only complete once gnuplot has closed it: the script ends with
//    `unset output`, and pclose() waits for gnuplot to exit.
//  * `gnuplot -d` ignores the user's ~/.gnuplot so figures look the same on
//    every machine.
//
// Debugging: with the environment variable SA_PLOT_KEEP_SCRIPT set, the
// script of each figure is also written next to it as <png>.gp, so
// `gnuplot <png>.gp` redraws it.

#include "sa/plot.hpp"

#include <fmt/format.h>
#include <gnuplot-iostream.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace sa::plot {
namespace {

namespace fs = std::filesystem;

// ---- Errors -----------------------------------------------------------------

[[noreturn]] void bad_input(std::string_view fn, const std::string& what) {
  throw std::invalid_argument(fmt::format("sa::plot::{}: {}", fn, what));
}

[[noreturn]] void failed(std::string_view fn, const std::string& what) {
  throw std::runtime_error(fmt::format("sa::plot::{}: {}", fn, what));
}

void check_size(std::string_view fn, int width, int height) {
  if (width <= 0 || height <= 0) {
    bad_input(fn, fmt::format("image size {} x {} must be positive", width, height));
  }
}

// ---- Text for gnuplot --------------------------------------------------------

// A gnuplot string literal holding `s` verbatim. Single quotes, because in
// double quotes gnuplot would run `backquoted` text through the shell and
// interpret backslashes. Only a quote needs escaping ('' inside '...'). A
// newline cannot be written inside single quotes, so it is spliced in with
// gnuplot's string concatenation: 'line 1'."\n".'line 2'. Tic labels are
// kept on one line (multiline = false).
std::string gq(std::string_view s, bool multiline = true) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "''";
    } else if (c == '\n') {
      out += multiline ? "'.\"\\n\".'" : " ";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';  // tabs, carriage returns, other control characters
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

// A word for /bin/sh, single-quoted.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A number in a datablock. fmt's "{}" is the shortest exact form and ignores
// the locale; gnuplot reads NaN as an undefined point.
std::string num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("NaN"); }

void datablock(std::string& script, const std::string& name, const std::string& rows) {
  script += name + " << EOD\n" + rows + "EOD\n";
}

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

// ---- Colours -----------------------------------------------------------------

struct Rgb {
  double r, g, b;  // 0..1, sRGB
};

Rgb hex_rgb(std::uint32_t h) {
  return {((h >> 16) & 0xFF) / 255.0, ((h >> 8) & 0xFF) / 255.0, (h & 0xFF) / 255.0};
}

std::string rgb_hex(Rgb c) {
  auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 1.0) * 255.0)); };
  return fmt::format("#{:02x}{:02x}{:02x}", byte(c.r), byte(c.g), byte(c.b));
}

// Evenly spaced colour stops; colours between stops are interpolated
// linearly in RGB, which is also what `set palette defined` does.
using Stops = std::vector<Rgb>;

Stops make_stops(std::initializer_list<std::uint32_t> hex) {
  Stops s;
  for (auto h : hex) s.push_back(hex_rgb(h));
  return s;
}

// Sequential white -> dark blue (ColorBrewer "Blues").
const Stops& blues() {
  static const Stops s = make_stops(
      {0xf7fbff, 0xdeebf7, 0xc6dbef, 0x9ecae1, 0x6baed6, 0x4292c6, 0x2171b5, 0x08519c, 0x08306b});
  return s;
}

// Diverging blue - white - red (ColorBrewer "RdBu", reversed), white at 0.
const Stops& blue_white_red() {
  static const Stops s = make_stops({0x053061, 0x2166ac, 0x4393c3, 0x92c5de, 0xd1e5f0, 0xf7f7f7,
                                     0xfddbc7, 0xf4a582, 0xd6604d, 0xb2182b, 0x67001f});
  return s;
}

// Viridis, for surfaces: no white end that would vanish against the page.
const Stops& viridis() {
  static const Stops s = make_stops(
      {0x440154, 0x482878, 0x3e4989, 0x31688e, 0x26828e, 0x1f9e89, 0x35b779, 0x6ece58, 0xb5de2b, 0xfde725});
  return s;
}

Rgb interpolate(const Stops& stops, double u) {
  u = std::clamp(u, 0.0, 1.0) * static_cast<double>(stops.size() - 1);
  const auto k = std::min(static_cast<std::size_t>(u), stops.size() - 2);
  const double f = u - static_cast<double>(k);
  const Rgb& a = stops[k];
  const Rgb& b = stops[k + 1];
  return {a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
}

// Line and bar colours (the "tab10" cycle): distinct, print well.
const std::array<const char*, 10> kCycle = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
const char* cycle_colour(std::size_t i) { return kCycle[i % kCycle.size()]; }

constexpr const char* kMaskedFill = "#d4d4d4";  // NaN / inf cells
constexpr const char* kMaskedText = "#4d4d4d";
constexpr const char* kDarkText = "#1a1a1a";

// Text colour for a cell of colour c: whichever of white and near-black has
// the higher WCAG contrast ratio against it.
const char* text_on(Rgb c) {
  auto lin = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  const double y = 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
  const double dark_y = 0.0103;  // relative luminance of #1a1a1a
  return (1.05 / (y + 0.05)) > ((y + 0.05) / (dark_y + 0.05)) ? "#ffffff" : kDarkText;
}

// Maps a value to a colour, the same way in C++ (for the annotation text
// colour) and in gnuplot (the palette command, in colour-bar units).
struct ColourScale {
  const Stops* stops;
  double lo, hi;
  bool diverging;  // white at value 0, even when [lo, hi] is not symmetric

  double position(double v) const {
    v = std::clamp(v, lo, hi);
    if (diverging) {
      const double m = std::max(std::abs(lo), std::abs(hi));
      return 0.5 + 0.5 * v / m;
    }
    return (v - lo) / (hi - lo);
  }
  Rgb at(double v) const { return interpolate(*stops, position(v)); }

  // `set palette defined (value colour, ...)`, in colour-bar units from lo to
  // hi: gnuplot rescales the first..last entry onto the cbrange, so the
  // palette lines up with the C++ mapping even for a lopsided diverging range.
  std::string command() const {
    std::vector<double> at_values{lo};
    const auto n = stops->size();
    for (std::size_t k = 0; k < n; ++k) {
      const double u = static_cast<double>(k) / static_cast<double>(n - 1);
      const double v = diverging ? (2.0 * u - 1.0) * std::max(std::abs(lo), std::abs(hi)) : lo + u * (hi - lo);
      if (v > lo && v < hi) at_values.push_back(v);
    }
    at_values.push_back(hi);
    std::string s = "set palette defined (";
    for (std::size_t i = 0; i < at_values.size(); ++i) {
      s += fmt::format("{}{:.10g} '{}'", i ? ", " : "", at_values[i], rgb_hex(at(at_values[i])));
    }
    return s + ")\n";
  }
};

// ---- Running gnuplot ---------------------------------------------------------

constexpr const char* kFailMarker = "SA_PLOT_GNUPLOT_FAILED";
constexpr const char* kFont = "Sans";

enum class Gnuplot_status { ok, not_found, no_pngcairo };

Gnuplot_status probe() {
  static const Gnuplot_status status = [] {
    bool found = false;
    if (const char* path = std::getenv("PATH")) {
      std::stringstream dirs(path);
      std::string dir;
      while (!found && std::getline(dirs, dir, ':')) {
        const fs::path exe = fs::path(dir.empty() ? "." : dir) / "gnuplot";
        found = ::access(exe.c_str(), X_OK) == 0 && !fs::is_directory(exe);
      }
    }
    if (!found) return Gnuplot_status::not_found;
    // gnuplot-x11 and gnuplot-nox both have pngcairo; a minimal build may not.
    const int rc = std::system("gnuplot -d -e 'set terminal pngcairo' >/dev/null 2>&1");
    return rc == 0 ? Gnuplot_status::ok : Gnuplot_status::no_pngcairo;
  }();
  return status;
}

// Returns "" after saying once, on stderr, why figures are skipped.
std::string skipped() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::cerr << (probe() == Gnuplot_status::no_pngcairo
                      ? "figures skipped: gnuplot has no pngcairo terminal (apt-get install gnuplot-nox)"
                      : "figures skipped: gnuplot not found (apt-get install gnuplot-nox)")
              << std::endl;
  });
  return "";
}

fs::path temp_log_path() {
  static std::atomic<unsigned> counter{0};
  return fs::temp_directory_path() / fmt::format("sa-plot-{}-{}.log", ::getpid(), counter++);
}

// The first error gnuplot reported, e.g. "line 12: undefined variable: x".
std::string first_error(const std::string& log) {
  std::istringstream in(log);
  std::string line, fallback;
  while (std::getline(in, line)) {
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line.find(kFailMarker) != std::string::npos) continue;
    // Trim and collapse runs of spaces ("line 0:          cannot open file").
    std::string squeezed;
    for (char c : line.substr(start)) {
      if (!(c == ' ' && !squeezed.empty() && squeezed.back() == ' ')) squeezed += c == '\t' ? ' ' : c;
    }
    line = squeezed;
    if (line.rfind("gnuplot>", 0) == 0 || line == "^") continue;  // the echoed command
    const bool warning = line.find("arning") != std::string::npos;
    if (line.rfind("line ", 0) == 0 && !warning) return line;
    if (fallback.empty() && !warning) fallback = line;
  }
  return fallback.empty() ? "gnuplot exited with an error" : fallback;
}

// A PNG is complete when it starts with the signature and ends with IEND.
bool is_complete_png(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec || size < 20) return false;
  std::ifstream f(p, std::ios::binary);
  std::array<char, 8> head{};
  std::array<char, 12> tail{};
  f.read(head.data(), head.size());
  f.seekg(-12, std::ios::end);
  f.read(tail.data(), tail.size());
  return f.good() && std::string_view(head.data(), 8) == "\x89PNG\r\n\x1a\n" &&
         std::string_view(tail.data() + 4, 4) == "IEND";
}

// Draws `body` (everything after the terminal and output are set) into
// png_path and returns once the file is complete.
std::string render(std::string_view fn, const std::string& png_path, int width, int height,
                   const std::string& body) {
  const fs::path out(png_path);
  std::error_code ec;
  if (out.has_parent_path()) {
    fs::create_directories(out.parent_path(), ec);
    if (ec) failed(fn, fmt::format("cannot create directory {}: {}", out.parent_path().string(), ec.message()));
  }
  if (fs::is_directory(out, ec)) failed(fn, fmt::format("{} is a directory, not a PNG file name", png_path));
  // Remove a previous figure so that the check below sees only this one.
  fs::remove(out, ec);

  std::string script;
  script += "set encoding utf8\n";
  // noenhanced: text is literal, so "d_k" stays d_k instead of a subscript.
  script += fmt::format("set terminal pngcairo size {},{} noenhanced font '{},11' background rgb 'white'\n",
                        width, height, kFont);
  script += "set output " + gq(png_path, false) + "\n";
  script += body;
  script += "unset multiplot\nunset output\n";  // closes the PNG

  if (std::getenv("SA_PLOT_KEEP_SCRIPT")) std::ofstream(png_path + ".gp") << script;

  const fs::path log = temp_log_path();
  {
    // The shell joins gnuplot's stdout and stderr in the log and appends a
    // marker when gnuplot exits non-zero (which it does after any error).
    Gnuplot gp(fmt::format("gnuplot -d >{0} 2>&1 || echo {1} >>{0}", shell_quote(log.string()), kFailMarker));
    gp << script << std::flush;
  }  // ~Gnuplot: flush, pclose -> waits until gnuplot has exited.

  std::string log_text;
  {
    std::ifstream in(log);
    log_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  fs::remove(log, ec);
  if (log_text.find(kFailMarker) != std::string::npos) {
    failed(fn, fmt::format("gnuplot failed drawing {}: {}", png_path, first_error(log_text)));
  }
  if (!is_complete_png(out)) failed(fn, fmt::format("gnuplot wrote no complete PNG at {}", png_path));
  return png_path;
}

// ---- Shared layout helpers ---------------------------------------------------

// Which of n tics to label. Token labels: all of them up to max_shown, then
// every k-th. Indices only (no labels): a round step (1, 2, 4, 5, 8, 10, 16,
// ...) giving at most 16 numbers, so 64 positions read 0, 8, 16, ...
std::size_t tic_stride(bool have_labels, std::size_t n, std::size_t max_shown = 40) {
  if (have_labels) return n <= max_shown ? 1 : (n + max_shown - 1) / max_shown;
  for (std::size_t base = 1;; base *= 10) {
    for (std::size_t step : {base, 2 * base, 4 * base, 5 * base, 8 * base}) {
      if (n <= 16 * step) return step;
    }
  }
}

// Explicit tic labels `set xtics ('the' 0, 'cat' 1, ...)` at 0..n-1 (see
// tic_stride for which are shown). Without labels the indices are shown.
std::string tic_list(const std::vector<std::string>& labels, std::size_t n, std::size_t max_shown = 40) {
  const std::size_t stride = tic_stride(!labels.empty(), n, max_shown);
  std::string s = "(";
  for (std::size_t i = 0; i < n; i += stride) {
    s += fmt::format("{}{} {}", i ? ", " : "", labels.empty() ? gq(std::to_string(i)) : gq(labels[i], false), i);
  }
  return s + ")";
}

// Where the legend goes: inside, in the corner of the plot where it hides
// the fewest data points, or outside on the right when every corner is busy.
// Points are given in axis units (already log-transformed when needed).
std::string key_place(const std::vector<std::pair<double, double>>& pts) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (auto [x, y] : pts) {
    x0 = std::min(x0, x);
    x1 = std::max(x1, x);
    y0 = std::min(y0, y);
    y1 = std::max(y1, y);
  }
  const std::array<const char*, 4> names = {"top right", "top left", "bottom right", "bottom left"};
  std::array<int, 4> count{};
  for (auto [x, y] : pts) {
    const double u = x1 > x0 ? (x - x0) / (x1 - x0) : 0.5;
    const double v = y1 > y0 ? (y - y0) / (y1 - y0) : 0.5;
    const bool right = u > 0.55, left = u < 0.45, top = v > 0.62, bottom = v < 0.38;
    count[0] += top && right;
    count[1] += top && left;
    count[2] += bottom && right;
    count[3] += bottom && left;
  }
  const auto best = std::min_element(count.begin(), count.end());
  if (*best > static_cast<int>(pts.size() / 50)) return "outside right top vertical";
  return std::string("inside ") + names[static_cast<std::size_t>(best - count.begin())];
}

// Common look of the 2-D charts: light grid behind, axes on two sides.
const char* kChartStyle =
    "set border 3 lw 1.2 lc rgb '#404040'\n"
    "set tics nomirror out scale 0.6\n"
    // The grid's default linetype 0 is dotted and nearly invisible in PNG.
    "set grid back lt 1 lw 1 lc rgb '#e4e4e4'\n"
    "set title font ',15'\n"
    "set xlabel font ',12'\n"
    "set ylabel font ',12'\n"
    // Legend: line sample first, then the left-aligned name.
    "set key opaque box lc rgb '#bdbdbd' Left reverse samplen 3 spacing 1.25 width 1\n";

// ---- Heatmaps ----------------------------------------------------------------

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
}

ColourScale heatmap_scale(const Heatmap& h) {
  double mn = std::numeric_limits<double>::infinity(), mx = -mn;
  for (Eigen::Index i = 0; i < h.values.size(); ++i) {
    const double v = h.values.data()[i];
    if (std::isfinite(v)) {
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
  }
  if (!std::isfinite(mn)) mn = 0.0, mx = 1.0;  // everything masked
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

std::string cell_text(float v, int decimals) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find_first_not_of("-0.") == std::string::npos && s[0] == '-') s.erase(0, 1);  // no "-0.00"
  return s;
}

// Emits one heatmap (a whole figure, or one multiplot panel) into `s`.
// width/height: the pixels this panel occupies; id: unique datablock suffix;
// base_pt: font size of tic labels (titles are a little larger).
// scale: the panel's share of the page ("1,1", or "0.25,0.47" in a grid).
void heatmap_panel(std::string& s, const Heatmap& h, int id, double width, double height, double base_pt,
                   const std::string& scale_xy = "1,1") {
  const auto rows = static_cast<std::size_t>(h.values.rows());
  const auto cols = static_cast<std::size_t>(h.values.cols());
  const ColourScale scale = heatmap_scale(h);
  constexpr double kPxPerPt = 96.0 / 72.0;  // pngcairo lays text out at 96 dpi
  const double char_px = 0.62 * base_pt * kPxPerPt;

  // Estimate the plot area to size the cell text: tic labels, axis labels,
  // title, and the colour bar take the margins.
  const std::size_t ylab_chars = h.row_labels.empty() ? std::to_string(rows).size() : longest(h.row_labels);
  const std::size_t xlab_chars = h.col_labels.empty() ? std::to_string(cols).size() : longest(h.col_labels);
  const double est_cell_w = (width - 200.0 - ylab_chars * char_px) / static_cast<double>(cols);
  // Rotate the key labels when they would not fit side by side.
  const double xlab_slot = est_cell_w * static_cast<double>(tic_stride(!h.col_labels.empty(), cols));
  const int rotate = xlab_chars * char_px > 0.9 * xlab_slot ? (cols > 24 ? 90 : 45) : 0;
  const double xlab_h = rotate ? std::min<double>(xlab_chars, 16) * char_px * (rotate == 90 ? 1.0 : 0.72) + 12 : 24;
  const double est_cell_h = (height - 110.0 - xlab_h) / static_cast<double>(rows);
  const double cell_px = std::max(1.0, std::min(est_cell_w, est_cell_h));

  // Cell text: as large as fits, never larger than the tic labels + 2pt.
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
  s += fmt::format("set title {} font ',{}'\n", gq(h.title), base_pt + 3);
  s += fmt::format("set xlabel {} font ',{}'\nset ylabel {} font ',{}'\n", gq(h.xlabel), base_pt + 1, gq(h.ylabel),
                   base_pt + 1);
  s += fmt::format("set cblabel {} font ',{}'\n", gq(h.cblabel), base_pt);
  s += fmt::format("set xtics {} font ',{}'", tic_list(h.col_labels, cols), base_pt);
  s += rotate ? fmt::format(" rotate by {} right\n", rotate) : std::string(" norotate\n");
  s += fmt::format("set ytics {} font ',{}'\n", tic_list(h.row_labels, rows), base_pt);
  s += fmt::format("set cbtics font ',{}'\nset format cb '%g'\n", base_pt - 1);
  s += "set colorbox default vertical\n";
  // Column j at x = j, row i at y = i; the y axis runs downwards (reversed
  // range), so row 0 is at the top like a table.
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [{}:-0.5]\n", cols - 0.5, rows - 0.5);
  s += fmt::format("set cbrange [{:.10g}:{:.10g}]\n", scale.lo, scale.hi);
  s += scale.command();
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
        const char* colour = std::isfinite(v) ? text_on(scale.at(v)) : kMaskedText;
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
  if (as_image) {
    s += "plot " + block + " using 1:2:3 with image notitle\n";
  } else {
    s += "plot " + block + " using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette notitle\n";
  }
}

// ---- Series helpers ------------------------------------------------------------

void validate_series(std::string_view fn, const Series& se, std::size_t index, bool need_y) {
  const std::string name = se.name.empty() ? fmt::format("series {}", index) : fmt::format("series '{}'", se.name);
  if (se.x.empty()) bad_input(fn, name + " has no points");
  if (need_y && se.x.size() != se.y.size()) {
    bad_input(fn, fmt::format("{} has {} x values but {} y values", name, se.x.size(), se.y.size()));
  }
}

// x values that are all powers of two (d_k = 4, 8, ..., 1024) get a base-2
// log axis with a tic at each power; returns the tic list or "".
std::string power_of_two_tics(const std::vector<Series>& series) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& se : series) {
    for (double x : se.x) {
      if (!std::isfinite(x)) continue;
      int e = 0;
      if (x <= 0 || std::frexp(x, &e) != 0.5) return "";
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  if (!(hi > lo)) return "";
  const int e0 = static_cast<int>(std::lround(std::log2(lo))), e1 = static_cast<int>(std::lround(std::log2(hi)));
  const int step = (e1 - e0) / 12 + 1;
  std::string s = "(";
  for (int e = e0; e <= e1; e += step) {
    s += fmt::format("{}'{}' {}", e == e0 ? "" : ", ", std::ldexp(1.0, e), std::ldexp(1.0, e));
  }
  return s + ")";
}

const char* style_clause(Series::Style st) {
  switch (st) {
    case Series::Style::Lines: return "with lines lw 2.2";
    case Series::Style::Points: return "with points pt 7 ps 1.1";
    case Series::Style::Dashed: return "with lines lw 2.2 dt (9,6)";
    case Series::Style::LinesPoints: break;
  }
  return "with linespoints lw 2.2 pt 7 ps 1.0";
}

std::string title_clause(const std::string& name) { return name.empty() ? "notitle" : "title " + gq(name); }

}  // namespace

// ---- Public functions ----------------------------------------------------------

bool available() { return probe() == Gnuplot_status::ok; }

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
  if (rows <= 0 || cols <= 0) {
    bad_input("heatmap_grid", fmt::format("grid {} x {} must have positive size", rows, cols));
  }
  if (panels.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols)) {
    bad_input("heatmap_grid",
              fmt::format("{} panels for a {} x {} grid (need {})", panels.size(), rows, cols, rows * cols));
  }
  for (std::size_t k = 0; k < panels.size(); ++k) {
    validate("heatmap_grid", panels[k], fmt::format("panel {}: ", k));
  }
  check_size("heatmap_grid", panel_px, panel_px);
  if (!available()) return skipped();

  const int title_px = title.empty() ? 0 : 50;
  const int width = cols * panel_px;
  const int height = rows * panel_px + title_px;
  // Smaller panels, smaller type: 9pt at 420 px.
  const double pt = std::clamp(panel_px / 46.0, 7.0, 11.0);
  std::string body;
  // Panels are placed by hand (set origin / set size, in screen fractions)
  // rather than with `set multiplot layout`: the layout's `margins` option
  // would force the same plot-area margins on every panel, and resetting
  // them makes every panel fill the whole page. The top title_px pixels are
  // left to the overall title.
  const double top = 1.0 - static_cast<double>(title_px) / height;
  const double pw = 1.0 / cols, ph = top / rows;
  body += fmt::format("set multiplot title {} font ',{:.0f}'\n", gq(title), pt + 7);
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const auto r = static_cast<int>(k) / cols, c = static_cast<int>(k) % cols;
    body += fmt::format("set origin {:.5f},{:.5f}\n", c * pw, top - (r + 1) * ph);
    heatmap_panel(body, panels[k], static_cast<int>(k), panel_px, panel_px, pt, fmt::format("{:.5f},{:.5f}", pw, ph));
  }
  return render("heatmap_grid", png_path, width, height, body);
}

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
  if (p.ymin && p.ymax && !(*p.ymin < *p.ymax)) bad_input("lines", "ymin must be below ymax");
  check_size("lines", width, height);
  if (!available()) return skipped();

  std::string s = kChartStyle;
  s += "set title " + gq(p.title) + "\nset xlabel " + gq(p.xlabel) + "\nset ylabel " + gq(p.ylabel) + "\n";
  if (p.logx) {
    const std::string tics = power_of_two_tics(p.series);
    if (!tics.empty()) {
      s += "set logscale x 2\nset xtics " + tics + "\n";
    } else {
      s += "set logscale x 10\nset format x '%g'\n";
    }
    s += "set mxtics default\n";
  }
  if (p.logy) s += "set logscale y 10\nset format y '%g'\n";
  s += fmt::format("set yrange [{}:{}]\n", p.ymin ? num(*p.ymin) : "*", p.ymax ? num(*p.ymax) : "*");
  // Linear axes: autoscale exactly to the data (xfix/yfix: gnuplot would
  // otherwise stretch the range to the next tic, e.g. 0..5 -> -1..6), then
  // add a little air so no point sits on the frame. The offsets only move
  // autoscaled ends, never a given ymin/ymax. Log axes keep whole decades.
  if (!p.logx) s += "set autoscale xfix\n";
  if (!p.logy) s += "set autoscale yfix\n";
  s += fmt::format("set offsets graph {0}, graph {0}, graph {1}, graph {1}\n", p.logx ? 0.0 : 0.03,
                   p.logy ? 0.0 : 0.05);

  // Legend in the emptiest corner, judged on the points and the segments.
  std::vector<std::pair<double, double>> pts;
  auto tx = [&](double x) { return p.logx ? std::log10(x) : x; };
  auto ty = [&](double y) { return p.logy ? std::log10(y) : y; };
  for (const auto& se : p.series) {
    for (std::size_t i = 0; i < se.x.size(); ++i) {
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i])) continue;
      if (p.ymin && se.y[i] < *p.ymin) continue;
      if (p.ymax && se.y[i] > *p.ymax) continue;
      pts.emplace_back(tx(se.x[i]), ty(se.y[i]));
      // Sample along the segment to the next point: a line crossing a corner
      // occupies it even where there is no data point.
      const bool segment = i + 1 < se.x.size() && se.style != Series::Style::Points &&
                           std::isfinite(se.x[i + 1]) && std::isfinite(se.y[i + 1]);
      if (segment) {
        const double xa = tx(se.x[i]), xb = tx(se.x[i + 1]), ya = ty(se.y[i]), yb = ty(se.y[i + 1]);
        for (int t = 1; t < 8; ++t) pts.emplace_back(xa + t / 8.0 * (xb - xa), ya + t / 8.0 * (yb - ya));
      }
    }
  }
  s += "set key " + key_place(pts) + "\n";

  std::string plot = "plot ";
  for (std::size_t k = 0; k < p.series.size(); ++k) {
    const Series& se = p.series[k];
    std::string data;
    for (std::size_t i = 0; i < se.x.size(); ++i) data += num(se.x[i]) + " " + num(se.y[i]) + "\n";
    const std::string block = fmt::format("$series{}", k);
    datablock(s, block, data);
    plot += fmt::format("{}{} using 1:2 {} lc rgb '{}' {}", k ? ", \\\n     " : "", block, style_clause(se.style),
                        cycle_colour(k), title_clause(se.name));
  }
  s += plot + "\n";
  return render("lines", png_path, width, height, s);
}

std::string bars(const std::string& png_path, const BarChart& c, int width, int height) {
  if (c.categories.empty()) bad_input("bars", "no categories");
  if (c.groups.empty()) bad_input("bars", "no groups");
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    if (c.groups[g].values.size() != c.categories.size()) {
      bad_input("bars", fmt::format("group '{}' has {} values for {} categories", c.groups[g].name,
                                    c.groups[g].values.size(), c.categories.size()));
    }
  }
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
  if (lo == hi) hi = 1;
  const double span = hi - lo;

  std::string s = kChartStyle;
  s += "set grid noxtics ytics\n";
  s += "set title " + gq(c.title) + "\nset ylabel " + gq(c.ylabel) + "\n";
  const std::size_t chars = longest(c.categories);
  const double slot_px = (width - 160.0) / static_cast<double>(ncat);
  s += fmt::format("set xtics {} scale 0 font ',12'", tic_list(c.categories, ncat, 60));
  s += chars * 9.5 > slot_px ? " rotate by 30 right\n" : " norotate\n";
  s += fmt::format("set xrange [-0.6:{}]\n", ncat - 0.4);
  // Room above (and below) the bars for the value labels.
  s += fmt::format("set yrange [{}:{}]\n", lo < 0 ? num(lo - 0.12 * span) : "0", hi > 0 ? num(hi + 0.12 * span) : "0");
  if (lo < 0) s += "set xzeroaxis lt -1 lw 1\n";
  // Legend under the axis: in the top margin it would sit above the title,
  // and inside the plot it would cover the tallest bars.
  s += "set key bmargin center horizontal noopaque nobox\n";
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
  int tag = 1;
  std::string plot = "plot ";
  for (std::size_t g = 0; g < ngroup; ++g) {
    std::string data;
    for (std::size_t i = 0; i < ncat; ++i) {
      const double v = c.groups[g].values[i];
      data += fmt::format("{} {}\n", num(bar_x(i, g)), num(v));
      if (value_labels && std::isfinite(v)) {
        s += fmt::format("set label {} {} at {},{} center offset 0,{} font ',{}' tc rgb '#303030'\n", tag++,
                         gq(value_text(v)), num(bar_x(i, g)), num(v), v >= 0 ? 0.7 : -0.7, ngroup * ncat > 20 ? 8 : 10);
      }
    }
    const std::string block = fmt::format("$bars{}", g);
    datablock(s, block, data);
    plot += fmt::format("{}{} using 1:2:({}) with boxes lc rgb '{}' {}", g ? ", \\\n     " : "", block,
                        num(bar_w * 0.95), cycle_colour(g), title_clause(c.groups[g].name));
  }
  s += plot + "\n";
  return render("bars", png_path, width, height, s);
}

std::string histogram(const std::string& png_path, const Histogram& h, int width, int height) {
  if (h.series.empty()) bad_input("histogram", "no series");
  if (h.bins < 1) bad_input("histogram", fmt::format("bins = {} must be at least 1", h.bins));
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t k = 0; k < h.series.size(); ++k) {
    validate_series("histogram", h.series[k], k, false);
    std::size_t finite = 0;
    for (double x : h.series[k].x) {
      if (std::isfinite(x)) ++finite, lo = std::min(lo, x), hi = std::max(hi, x);
    }
    if (finite == 0) bad_input("histogram", fmt::format("series '{}' has no finite samples", h.series[k].name));
  }
  check_size("histogram", width, height);
  if (!available()) return skipped();

  // Shared bins over all samples, counted here: every series uses the same
  // edges, so the overlaid bars line up.
  if (lo == hi) lo -= 0.5, hi += 0.5;
  const auto nb = static_cast<std::size_t>(h.bins);
  const double bw = (hi - lo) / static_cast<double>(nb);
  std::vector<std::vector<double>> counts(h.series.size(), std::vector<double>(nb, 0.0));
  double top = 0;
  for (std::size_t k = 0; k < h.series.size(); ++k) {
    for (double x : h.series[k].x) {
      if (!std::isfinite(x)) continue;
      const auto b = std::min(static_cast<std::size_t>((x - lo) / bw), nb - 1);
      top = std::max(top, ++counts[k][b]);
    }
  }

  std::string s = kChartStyle;
  s += "set title " + gq(h.title) + "\nset xlabel " + gq(h.xlabel) + "\nset ylabel " + gq(h.ylabel) + "\n";
  s += fmt::format("set xrange [{}:{}]\nset yrange [0:{}]\n", num(lo - bw), num(hi + bw), num(top * 1.08));
  std::vector<std::pair<double, double>> pts;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    for (std::size_t b = 0; b < nb; ++b) {
      for (int t = 0; t <= 4; ++t) pts.emplace_back(lo + (b + 0.5) * bw, counts[k][b] * t / 4.0);
    }
  }
  pts.emplace_back(lo - bw, 0);
  pts.emplace_back(hi + bw, top * 1.08);
  s += "set key " + key_place(pts) + "\n";

  std::string plot = "plot ";
  for (std::size_t k = 0; k < h.series.size(); ++k) {
    std::string data;
    for (std::size_t b = 0; b < nb; ++b) data += fmt::format("{} {}\n", num(lo + (b + 0.5) * bw), counts[k][b]);
    const std::string block = fmt::format("$hist{}", k);
    datablock(s, block, data);
    // Semi-transparent fill so overlapping histograms both stay visible.
    plot += fmt::format("{}{} using 1:2:({}) with boxes fs transparent solid 0.4 border lc rgb '{}' lw 1.2 "
                        "lc rgb '{}' {}",
                        k ? ", \\\n     " : "", block, num(bw), cycle_colour(k), cycle_colour(k),
                        title_clause(h.series[k].name));
  }
  s += plot + "\n";
  return render("histogram", png_path, width, height, s);
}

std::string surface(const std::string& png_path, const Surface& sf, int width, int height) {
  const auto rows = static_cast<std::size_t>(sf.z.rows()), cols = static_cast<std::size_t>(sf.z.cols());
  if (rows == 0 || cols == 0) bad_input("surface", "empty matrix");
  if (rows < 2 || cols < 2) {
    bad_input("surface", fmt::format("a {} x {} matrix has no surface (need 2 x 2)", rows, cols));
  }
  if (!sf.row_labels.empty() && sf.row_labels.size() != rows) {
    bad_input("surface", fmt::format("{} row labels for a {} x {} matrix", sf.row_labels.size(), rows, cols));
  }
  if (!sf.col_labels.empty() && sf.col_labels.size() != cols) {
    bad_input("surface", fmt::format("{} column labels for a {} x {} matrix", sf.col_labels.size(), rows, cols));
  }
  check_size("surface", width, height);
  if (!available()) return skipped();

  double mn = std::numeric_limits<double>::infinity(), mx = -mn;
  for (Eigen::Index i = 0; i < sf.z.size(); ++i) {
    const double v = sf.z.data()[i];
    if (std::isfinite(v)) mn = std::min(mn, v), mx = std::max(mx, v);
  }
  if (!std::isfinite(mn)) mn = 0, mx = 1;
  if (mn == mx) mx = mn + 1;
  const double zlo = mn >= 0 ? 0.0 : mn;  // weights stand on the floor at 0

  std::string s;
  s += "set title " + gq(sf.title) + " font ',15'\n";
  // Looking down 55 degrees, turned 40 degrees: keys run along the front
  // left edge, the query axis goes into the picture with row 0 at the back
  // (like the top row of the heatmap).
  s += "set view 55, 40, 0.95, 1.05\n";
  s += "set xyplane at " + num(zlo) + "\n";
  s += fmt::format("set xrange [0:{}]\nset yrange [{}:0]\nset zrange [{}:{}]\n", cols - 1, rows - 1, num(zlo), num(mx));
  s += fmt::format("set cbrange [{}:{}]\n", num(zlo), num(mx));
  s += ColourScale{&viridis(), zlo, mx, false}.command();
  // depthorder: draw far quadrangles first, so near peaks hide far ones.
  // interpolate: shade each cell in 6 x 6 sub-quadrangles, so the colour
  // follows the height smoothly instead of one flat colour per cell (flat
  // facets with borders looked like crumpled paper). Values at the grid
  // points are unchanged. No mesh on top: straight mesh lines disagree with
  // the interpolated shading, and hidden3d does not hide them behind pm3d.
  s += "set pm3d depthorder interpolate 6,6 noborder\nset pm3d corners2color mean\n";
  s += "set grid z back lt 1 lw 1 lc rgb '#e0e0e0'\nset border 1+2+4+8+16 lw 1 lc rgb '#404040'\n";
  // Offsets push the key and query tic labels apart at the front corner.
  s += fmt::format("set xtics {} scale 0 font ',10' offset -0.8,-0.6", tic_list(sf.col_labels, cols, 24));
  s += longest(sf.col_labels) > 4 ? " rotate by 30 right\n" : "\n";
  s += fmt::format("set ytics {} scale 0 font ',10' offset 1.5,-0.3\n", tic_list(sf.row_labels, rows, 24));
  s += "set ztics scale 0.5 font ',10'\nset format z '%g'\nset format cb '%g'\n";
  s += "set xlabel " + gq(sf.xlabel) + " font ',12' offset 0,-1.5\n";
  s += "set ylabel " + gq(sf.ylabel) + " font ',12' offset 2,0\n";
  s += "set zlabel " + gq(sf.zlabel) + " font ',12' rotate parallel offset 1,0\n";
  s += "set cblabel " + gq(sf.zlabel) + " font ',11' offset 1.5,0\n";
  s += "set colorbox vertical user origin 0.9,0.25 size 0.022,0.5\n";
  s += "unset key\n";

  // Scan lines "x y z", one blank line between rows: the grid pm3d needs.
  std::string data;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      data += fmt::format("{} {} {}\n", j, i, num(sf.z(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))));
    }
    data += "\n";
  }
  datablock(s, "$surface", data);
  s += "splot $surface using 1:2:3 with pm3d notitle\n";
  return render("surface", png_path, width, height, s);
}

}  // namespace sa::plot
