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
//  * Layout (see "Layout estimates" and "Legend and label placement"):
//    gnuplot centres the title on the plot area, not the canvas, and cuts
//    off what runs past the edge, so the legend never goes outside on the
//    right (that shifts the plot area left) and long titles are shrunk or
//    wrapped. Ranges are set explicitly, never autoscaled with `set offsets`
//    (which also moved a given ymin: a chart asking for ymin = 0 got its 0
//    tic lifted off the axis), so we know the range drawn when placing the
//    legend. Log axes get explicit tics, since gnuplot labels only whole
//    decades and a range inside one decade got one labelled tic or none.
//  * Front arrows are drawn after front labels, so a `set arrow` would
//    strike through any label; reference lines are plot elements instead.
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
#include <optional>
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

// ---- Layout estimates -----------------------------------------------------------
//
// gnuplot lays a figure out itself and does not tell us where things ended
// up, so the decisions below (legend spot, reference-line labels, title
// size) rest on pixel estimates, measured on pngcairo (96 dpi) with the
// Sans font (DejaVu Sans) used here. They err on the generous side.

constexpr double kPxPerPt = 96.0 / 72.0;  // pngcairo lays text out at 96 dpi

// Width in pixels of `chars` characters of text at `pt` points. Running
// text averages about 0.52 em per character; digits are wider (0.62 em).
double text_px(std::size_t chars, double pt, bool digits = false) {
  return static_cast<double>(chars) * pt * kPxPerPt * (digits ? 0.62 : 0.52);
}

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

std::string title_command(const std::string& title, double avail_px, double pt, double min_pt) {
  const auto [text, size] = fit_title(title, avail_px, pt, min_pt);
  return fmt::format("set title {} font ',{:.3g}'\n", gq(text), size);
}

// The plot area (inside the border) of a 2-D chart, estimated: the y tic
// labels and ylabel take about 90 px on the left, the last x tic label
// about 30 px on the right; the title about 57 px on top, tic labels and
// xlabel about 60 px at the bottom.
struct Frame {
  double w, h;  // pixels
};

Frame chart_frame(int width, int height, bool has_title, bool has_xlabel) {
  return {std::max(width - 120.0, 50.0),
          std::max(height - (has_title ? 57.0 : 25.0) - (has_xlabel ? 60.0 : 40.0), 50.0)};
}

// ---- Axes --------------------------------------------------------------------------

// A drawn axis range, and the map from data values to gnuplot's `graph`
// coordinates (0 at the left/bottom border, 1 at the right/top one). We set
// every range of a chart ourselves rather than leave it to autoscale, so the
// legend and label placement know the range actually drawn.
struct Axis {
  double lo, hi;  // data units; both > 0 on a log axis
  bool log;

  double t(double v) const { return log ? std::log10(v) : v; }
  double frac(double v) const { return (t(v) - t(lo)) / (t(hi) - t(lo)); }
  std::string range() const { return "[" + num(lo) + ":" + num(hi) + "]"; }
};

// The range to draw for data spanning lo..hi (finite; > 0 on a log axis):
// the given ends where there are any; each other end is the data's end plus
// `air` of the drawn span, so no point sits on the border and no marker is
// cut in half. On a log axis the air is taken in log space, i.e. a factor
// (3% of 4..1024 is a factor 1.18), and the tics stay at the data's values.
Axis padded_axis(double lo, double hi, bool log, double air, std::optional<double> given_lo = {},
                 std::optional<double> given_hi = {}) {
  auto t = [&](double v) { return log ? std::log10(v) : v; };
  auto inv = [&](double u) { return log ? std::pow(10.0, u) : u; };
  double a = given_lo ? t(*given_lo) : t(lo);
  double b = given_hi ? t(*given_hi) : t(hi);
  if (!(a < b)) {
    // One value only (or a given end beyond all the data): open up a span
    // around it -- a factor 2 on a log axis, 10% (at least 0.5) otherwise.
    const double half = log ? std::log10(2.0) : std::max(0.1 * std::abs(a), 0.5);
    if (given_lo && !given_hi) {
      b = a + 2 * half;
    } else if (given_hi && !given_lo) {
      a = b - 2 * half;
    } else {
      a -= half;
      b += half;
    }
  }
  const double pad = air * (b - a);
  return {inv(given_lo ? a : a - pad), inv(given_hi ? b : b + pad), log};
}

// The number v as a tic label, with `decimals` places when given, else
// the shortest form, exponents written 1e6 and 1e-6 (not 1e+06, 1e-06).
std::string tic_label(double v, int decimals = -1) {
  if (decimals >= 0) return fmt::format("{:.{}f}", v, decimals);
  std::string s = fmt::format("{:g}", v);
  if (const auto e = s.find('e'); e != std::string::npos) {
    std::size_t digits = e + 1;
    if (s[digits] == '+') s.erase(digits, 1);
    else if (s[digits] == '-') ++digits;
    while (digits + 1 < s.size() && s[digits] == '0') s.erase(digits, 1);
  }
  return s;
}

// Explicit tics for a log axis, `(label value, ...)`. gnuplot's own log tics
// are whole decades only, and a range that spans less than a decade or two
// (0.85..1.2, say) gets one labelled tic or none. So: decades (with unlabelled
// minor tics at 2..9) when at least three fit, else 1-2-5 steps, else
// 1, 2, ..., 9 steps, else round linear steps.
std::string log_tics(const Axis& a) {
  const double lo = a.lo * (1 - 1e-9), hi = a.hi * (1 + 1e-9);
  const int e0 = static_cast<int>(std::floor(std::log10(a.lo))) - 1;
  const int e1 = static_cast<int>(std::ceil(std::log10(a.hi))) + 1;
  std::string list;
  auto add = [&](const std::string& label, double v, bool minor) {
    list += fmt::format("{}{} {}{}", list.empty() ? "(" : ", ", gq(label), num(v), minor ? " 1" : "");
  };
  const std::array<std::vector<int>, 3> mantissas = {
      std::vector<int>{1}, std::vector<int>{1, 2, 5}, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}};
  for (const auto& mant : mantissas) {
    std::vector<double> majors;
    for (int e = e0; e <= e1; ++e) {
      for (int m : mant) {
        const double v = m * std::pow(10.0, e);
        if (v >= lo && v <= hi) majors.push_back(v);
      }
    }
    if (majors.size() < 3) continue;
    // Many decades: label every k-th, at most 10 labels.
    const std::size_t k = mant.size() == 1 ? (majors.size() + 9) / 10 : 1;
    for (std::size_t i = 0; i < majors.size(); i += k) add(tic_label(majors[i]), majors[i], false);
    if (mant.size() == 1 && k == 1) {
      for (int e = e0; e <= e1; ++e) {
        for (int m = 2; m <= 9; ++m) {
          const double v = m * std::pow(10.0, e);
          if (v >= lo && v <= hi) add("", v, true);
        }
      }
    }
    return list + ")";
  }
  // Less than a factor of about 1.5: linear steps of 1, 2 or 5 x 10^k, 3 to 6 of them.
  const double raw = (a.hi - a.lo) / 4;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : 5 * mag;
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step))));
  for (double i = std::ceil(a.lo / step); i * step <= a.hi; ++i) add(tic_label(i * step, decimals), i * step, false);
  return list.empty() ? "autofreq" : list + ")";
}

// ---- Legend and label placement ----------------------------------------------------
//
// What the legend or a label could cover is recorded in graph coordinates:
// data points, line segments (sampled), bars and reference lines. A spot is
// free when nothing recorded falls inside it.

struct Box {
  double x0, y0, x1, y1;  // graph coordinates

  bool contains(double u, double v) const { return u >= x0 && u <= x1 && v >= y0 && v <= y1; }
  bool overlaps(const Box& b) const { return x0 < b.x1 && b.x0 < x1 && y0 < b.y1 && b.y0 < y1; }
  bool inside_frame() const { return x0 >= 0 && y0 >= 0 && x1 <= 1 && y1 <= 1; }
};

class Occupancy {
 public:
  void point(double u, double v) {
    if (u >= 0 && u <= 1 && v >= 0 && v <= 1) pts_.emplace_back(u, v);
  }
  // A line from (u0, v0) to (u1, v1), sampled every 0.004 of the frame
  // (3 px on a 780 px wide plot): a line crossing a corner occupies it even
  // where there is no data point. Parts outside the frame are clipped away.
  void segment(double u0, double v0, double u1, double v1) {
    if ((u0 < 0 && u1 < 0) || (u0 > 1 && u1 > 1) || (v0 < 0 && v1 < 0) || (v0 > 1 && v1 > 1)) return;
    const double len = std::max(std::abs(u1 - u0), std::abs(v1 - v0));
    const int n = static_cast<int>(std::min(std::ceil(len / 0.004), 2000.0));
    for (int i = 1; i < n; ++i) {
      const double f = static_cast<double>(i) / n;
      point(u0 + f * (u1 - u0), v0 + f * (v1 - v0));
    }
  }
  void box(const Box& b) { boxes_.push_back(b); }

  // How much of what is recorded lies in b (a box counts as many points).
  std::size_t count(const Box& b) const {
    std::size_t n = 0;
    for (auto [u, v] : pts_) n += b.contains(u, v);
    for (const Box& o : boxes_) n += b.overlaps(o) ? 100 : 0;
    return n;
  }

 private:
  std::vector<std::pair<double, double>> pts_;
  std::vector<Box> boxes_;
};

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
// entry; the line sample, gaps and box take about 105 px besides the text.
struct KeySize {
  double w, h;
};

KeySize key_size(const std::vector<std::string>& names) {
  return {text_px(longest(names), 11) + 105.0, 21.5 * static_cast<double>(names.size()) + 6.0};
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
  return "bmargin center horizontal noopaque nobox";
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
constexpr const char* kRefLabelStyle = "boxed tc rgb '#404040' font ',10' front";
constexpr const char* kTextboxStyle = "set style textbox opaque noborder margins 1,1\n";
constexpr double kRefLabelPt = 10;

// The label box of a reference line at height v, in pixels: the text plus
// the textbox margins; it sits 4..22 px above or below the line, and about
// 9 px (one character, the label offset) in from the border.
struct LabelSpot {
  std::string at;  // `at ... offset ...` for `set label`
  Box box;
};

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
// rotate: in a grid, one key-label rotation for every panel (else the panel
// decides), so that matrices of one shape draw at one size.
void heatmap_panel(std::string& s, const Heatmap& h, int id, double width, double height, double base_pt,
                   const std::string& scale_xy = "1,1", std::optional<int> rotate_labels = std::nullopt) {
  const auto rows = static_cast<std::size_t>(h.values.rows());
  const auto cols = static_cast<std::size_t>(h.values.cols());
  const ColourScale scale = heatmap_scale(h);
  const double char_px = 0.62 * base_pt * kPxPerPt;

  // Estimate the plot area to size the cell text: tic labels, axis labels,
  // title, and the colour bar take the margins.
  const std::size_t ylab_chars = h.row_labels.empty() ? std::to_string(rows).size() : longest(h.row_labels);
  const std::size_t xlab_chars = h.col_labels.empty() ? std::to_string(cols).size() : longest(h.col_labels);
  const double est_cell_w = (width - 200.0 - ylab_chars * char_px) / static_cast<double>(cols);
  // Rotate the key labels when they would not fit side by side.
  const double xlab_slot = est_cell_w * static_cast<double>(tic_stride(!h.col_labels.empty(), cols));
  const int rotate =
      rotate_labels ? *rotate_labels : xlab_chars * char_px > 0.9 * xlab_slot ? (cols > 24 ? 90 : 45) : 0;
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
  // The title is centred on the square plot area; about width - 90 px fit.
  s += title_command(h.title, width - 90.0, base_pt + 3, base_pt);
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

// RefLine values must be finite (and positive on a log axis).
void validate_hlines(std::string_view fn, const std::vector<RefLine>& hlines, bool logy) {
  for (const RefLine& h : hlines) {
    if (!std::isfinite(h.y)) bad_input(fn, fmt::format("hline '{}' has y = {}", h.label, h.y));
    if (logy && h.y <= 0) bad_input(fn, fmt::format("log y axis but hline '{}' has y = {}", h.label, h.y));
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

  const int width = cols * panel_px;
  // Smaller panels, smaller type, but never below 9 pt: labels must read at
  // 100 % (11 pt at 420 px and more).
  const double pt = std::clamp(panel_px / 38.0, 9.0, 11.0);
  // A long title is set smaller or on two lines (fit_title); a second line
  // needs more room above the panels.
  const auto [title_text, title_pt] = fit_title(title, width - 40.0, pt + 7, pt + 2);
  const bool two_lines = title_text.find('\n') != std::string::npos;
  const int title_px = title.empty() ? 0 : two_lines ? 50 + static_cast<int>(std::lround(title_pt * 1.6)) : 50;
  const int height = rows * panel_px + title_px;
  std::string body;
  // Panels are placed by hand (set origin / set size, in screen fractions)
  // rather than with `set multiplot layout`: the layout's `margins` option
  // would force the same plot-area margins on every panel, and resetting
  // them makes every panel fill the whole page. The top title_px pixels are
  // left to the overall title.
  const double top = 1.0 - static_cast<double>(title_px) / height;
  const double pw = 1.0 / cols, ph = top / rows;
  // One label rotation for every panel: the longest labels of any panel decide.
  std::size_t ylab_chars = 1, xlab_chars = 1, max_cols = 1;
  for (const Heatmap& h : panels) {
    const auto n_rows = static_cast<std::size_t>(h.values.rows()), n_cols = static_cast<std::size_t>(h.values.cols());
    ylab_chars = std::max(ylab_chars, h.row_labels.empty() ? std::to_string(n_rows).size() : longest(h.row_labels));
    xlab_chars = std::max(xlab_chars, h.col_labels.empty() ? std::to_string(n_cols).size() : longest(h.col_labels));
    max_cols = std::max(max_cols, n_cols);
  }
  const double char_px = 0.62 * pt * kPxPerPt;
  const double cell_w = (panel_px - 200.0 - ylab_chars * char_px) / static_cast<double>(max_cols);
  // Slanted labels still need about 1.6 lines of height per cell; below
  // that they overlap, and only upright ones (one line each) fit.
  const bool crowded = max_cols > 24 || cell_w < 1.6 * pt * kPxPerPt;
  const int rotate = xlab_chars * char_px > 0.9 * cell_w ? (crowded ? 90 : 45) : 0;
  // gnuplot's automatic margins follow each panel's labels: row labels
  // padded to one length (right-aligned, so only the margin changes) make
  // every panel's left margin the same.
  body += fmt::format("set multiplot title {} font ',{:.3g}'\n", gq(title_text), title_pt);
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const auto r = static_cast<int>(k) / cols, c = static_cast<int>(k) % cols;
    body += fmt::format("set origin {:.5f},{:.5f}\n", c * pw, top - (r + 1) * ph);
    Heatmap padded = panels[k];
    if (padded.row_labels.empty())
      for (Eigen::Index i = 0; i < padded.values.rows(); ++i) padded.row_labels.push_back(std::to_string(i));
    for (std::string& label : padded.row_labels) label.insert(0, ylab_chars - std::min(ylab_chars, label.size()), ' ');
    heatmap_panel(body, padded, static_cast<int>(k), panel_px, panel_px, pt, fmt::format("{:.5f},{:.5f}", pw, ph),
                  rotate);
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
  if ((p.ymin && !std::isfinite(*p.ymin)) || (p.ymax && !std::isfinite(*p.ymax))) {
    bad_input("lines", "ymin and ymax must be finite");
  }
  if (p.ymin && p.ymax && !(*p.ymin < *p.ymax)) bad_input("lines", "ymin must be below ymax");
  validate_hlines("lines", p.hlines, p.logy);
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& se : p.series) {
    for (std::size_t i = 0; i < se.x.size(); ++i) {
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i])) continue;
      x0 = std::min(x0, se.x[i]), x1 = std::max(x1, se.x[i]);
      y0 = std::min(y0, se.y[i]), y1 = std::max(y1, se.y[i]);
    }
  }
  if (!(x0 <= x1)) bad_input("lines", "no point has a finite x and y");
  check_size("lines", width, height);
  if (!available()) return skipped();

  // The ranges: ymin/ymax where given, else the data's ends (hlines
  // included, so they are drawn) with a little air -- 3% of the width, 5%
  // of the height -- so no point sits on the border. Log axes get the same
  // air as a factor; their tics stay at the data values (see log_tics).
  for (const RefLine& h : p.hlines) y0 = std::min(y0, h.y), y1 = std::max(y1, h.y);
  const Axis xa = padded_axis(x0, x1, p.logx, 0.03);
  const Axis ya = padded_axis(y0, y1, p.logy, 0.05, p.ymin, p.ymax);
  const Frame frame = chart_frame(width, height, !p.title.empty(), !p.xlabel.empty());

  std::string s = kChartStyle;
  s += title_command(p.title, width - 90.0, 15, 11);
  s += "set xlabel " + gq(p.xlabel) + "\nset ylabel " + gq(p.ylabel) + "\n";
  if (p.logx) {
    const std::string tics = power_of_two_tics(p.series);
    s += "set logscale x\nset xtics " + (tics.empty() ? log_tics(xa) : tics) + "\n";
  }
  if (p.logy) s += "set logscale y\nset ytics " + log_tics(ya) + "\n";
  s += "set xrange " + xa.range() + "\nset yrange " + ya.range() + "\n";

  // What the legend and the hline labels must not cover.
  Occupancy occ;
  for (const auto& se : p.series) occupy_series(occ, se, xa, ya);

  // Reference lines: all lines first, so no label lands on another line.
  std::vector<std::pair<const RefLine*, double>> shown;  // line, graph height
  for (const RefLine& h : p.hlines) {
    const double v = ya.frac(h.y);
    if (v < -1e-9 || v > 1 + 1e-9) continue;  // outside a given ymin..ymax
    shown.emplace_back(&h, v);
    occ.segment(0, v, 1, v);
  }
  if (!shown.empty()) s += kTextboxStyle;
  int tag = 1;
  for (auto [h, v] : shown) {
    if (h->label.empty()) continue;
    const LabelSpot spot = place_refline_label(occ, h->label, h->y, v, frame);
    occ.box(spot.box);
    s += fmt::format("set label {} {} {} {}\n", tag++, gq(h->label, false), spot.at, kRefLabelStyle);
  }

  // The legend, judged on the range actually drawn (so ymin/ymax headroom
  // counts).
  std::vector<std::string> names;
  for (const auto& se : p.series) {
    if (!se.name.empty()) names.push_back(se.name);
  }
  s += names.empty() ? std::string("unset key\n") : "set key " + key_place(occ, frame, key_size(names)) + "\n";

  // Reference lines first, so the data is drawn over them.
  std::string plot = "plot ";
  for (auto [h, v] : shown) plot += refline_clause(h->y) + ", \\\n     ";
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

namespace {

// Histogram::own_axes: one panel per series, each binned over its own range.
std::string histogram_panels(const std::string& png_path, const Histogram& h, int width, int height) {
  const auto n = h.series.size();
  const auto [title_text, title_pt] = fit_title(h.title, width - 40.0, 15, 11);
  const double top = h.title.empty() ? 1.0 : 1.0 - 50.0 / height;
  const double pw = 1.0 / static_cast<double>(n);
  std::string s = kChartStyle;
  s += "unset key\n";
  s += fmt::format("set multiplot title {} font ',{:.3g}'\n", gq(title_text), title_pt);
  for (std::size_t k = 0; k < n; ++k) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double x : h.series[k].x)
      if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    if (lo == hi) lo -= 0.5, hi += 0.5;
    const auto nb = static_cast<std::size_t>(h.bins);
    const double bw = (hi - lo) / static_cast<double>(nb);
    std::vector<double> counts(nb, 0.0);
    double peak = 0;
    for (double x : h.series[k].x) {
      if (!std::isfinite(x)) continue;
      peak = std::max(peak, ++counts[std::min(static_cast<std::size_t>((x - lo) / bw), nb - 1)]);
    }
    std::string data;
    for (std::size_t b = 0; b < nb; ++b) data += fmt::format("{} {}\n", num(lo + (b + 0.5) * bw), counts[b]);
    const std::string block = fmt::format("$hist{}", k);
    datablock(s, block, data);
    s += fmt::format("set origin {:.5f},0\nset size {:.5f},{:.5f}\n", static_cast<double>(k) * pw, pw, top);
    s += title_command(h.series[k].name, width * pw - 60.0, 13, 10);
    s += "set xlabel " + gq(h.xlabel) + "\nset ylabel " + gq(k == 0 ? h.ylabel : "") + "\n";
    s += fmt::format("set xrange [{}:{}]\nset yrange [0:{}]\n", num(lo - bw), num(hi + bw), num(peak * 1.08));
    s += fmt::format("plot {} using 1:2:({}) with boxes fs transparent solid 0.4 border lc rgb '{}' lw 1.2 "
                     "lc rgb '{}' notitle\n",
                     block, num(bw), cycle_colour(k), cycle_colour(k));
  }
  return render("histogram", png_path, width, height, s);
}

}  // namespace

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
  if (h.own_axes && h.series.size() > 1) return histogram_panels(png_path, h, width, height);

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

  const Axis xa = {lo - bw, hi + bw, false}, ya = {0, top * 1.08, false};
  std::string s = kChartStyle;
  s += title_command(h.title, width - 90.0, 15, 11);
  s += "set xlabel " + gq(h.xlabel) + "\nset ylabel " + gq(h.ylabel) + "\n";
  s += "set xrange " + xa.range() + "\nset yrange " + ya.range() + "\n";
  // The legend avoids the bars (each a box from 0 up to its count).
  Occupancy occ;
  std::vector<std::string> names;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    if (!h.series[k].name.empty()) names.push_back(h.series[k].name);
    for (std::size_t b = 0; b < nb; ++b) {
      if (counts[k][b] <= 0) continue;
      const double b0 = lo + static_cast<double>(b) * bw;
      occ.box({xa.frac(b0), 0, xa.frac(b0 + bw), ya.frac(counts[k][b])});
    }
  }
  const Frame frame = chart_frame(width, height, !h.title.empty(), !h.xlabel.empty());
  s += names.empty() ? std::string("unset key\n") : "set key " + key_place(occ, frame, key_size(names)) + "\n";

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
  s += title_command(sf.title, width - 60.0, 15, 11);
  // Looking down 55 degrees, turned 40 degrees: keys run along the front
  // left edge, the query axis goes into the picture with row 0 at the back
  // (like the top row of the heatmap).
  s += "set view 55, 40, 0.95, 1.05\n";
  s += "set xyplane at " + num(zlo) + "\n";
  // Cell (i, j) is a flat block over [j - 0.5, j + 0.5] x [i - 0.5, i + 0.5]
  // at its value: the weights are drawn as they are, one per (query, key),
  // with nothing interpolated between tokens. Ticks sit on the centres.
  // (The ranges include the ring of floor around the blocks.)
  s += fmt::format("set xrange [-1.5:{}]\nset yrange [{}:-1.5]\nset zrange [{}:{}]\n", cols + 0.5, rows + 0.5,
                   num(zlo), num(mx));
  s += fmt::format("set cbrange [{}:{}]\n", num(zlo), num(mx));
  s += ColourScale{&viridis(), zlo, mx, false}.command();
  // depthorder: draw far quadrangles first, so near blocks hide far ones.
  // A thin border separates the blocks; corners2color max gives a block's
  // top and its walls the block's own colour.
  s += "set pm3d depthorder border lw 0.5 lc rgb '#ffffff'\nset pm3d corners2color max\n";
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

  // Scan lines "x y z", one blank line between them: the grid pm3d needs.
  // Each row of cells is two scan lines (its front and back edge), each cell
  // two points (its left and right edge), all at the cell's value; where two
  // neighbours meet, the repeated x or y makes the wall between them.
  std::string data;
  const double floor_z = zlo;
  for (std::size_t i = 0; i <= rows + 1; ++i) {
    // Row -1 and row `rows` are the floor around the blocks, so the outer
    // walls reach down to it.
    for (const double y : {static_cast<double>(i) - 1.5, static_cast<double>(i) - 0.5}) {
      for (std::size_t j = 0; j <= cols + 1; ++j) {
        const bool floor = i == 0 || i == rows + 1 || j == 0 || j == cols + 1;
        const double z =
            floor ? floor_z : double(sf.z(static_cast<Eigen::Index>(i - 1), static_cast<Eigen::Index>(j - 1)));
        const double x0 = static_cast<double>(j) - 1.5, x1 = static_cast<double>(j) - 0.5;
        data += fmt::format("{} {} {}\n{} {} {}\n", num(x0), num(y), num(z), num(x1), num(y), num(z));
      }
      data += "\n";
    }
  }
  datablock(s, "$surface", data);
  s += "splot $surface using 1:2:3 with pm3d notitle\n";
  return render("surface", png_path, width, height, s);
}

// ---- Flow diagrams -------------------------------------------------------------

std::string flow(const std::string& png_path, const std::string& title, int rows, int cols,
                 const std::vector<FlowPanel>& panels, double min_weight, int panel_px) {
  if (rows <= 0 || cols <= 0) bad_input("flow", fmt::format("grid {} x {} must have positive size", rows, cols));
  if (panels.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols)) {
    bad_input("flow", fmt::format("{} panels for a {} x {} grid (need {})", panels.size(), rows, cols, rows * cols));
  }
  if (!(min_weight >= 0 && min_weight <= 1)) bad_input("flow", fmt::format("min_weight {} is not in [0, 1]", min_weight));
  std::size_t tokens = 1, label_chars = 1;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const FlowPanel& p = panels[k];
    const auto nq = static_cast<std::size_t>(p.weights.rows()), nk = static_cast<std::size_t>(p.weights.cols());
    if (nq == 0 || nk == 0) bad_input("flow", fmt::format("panel {}: empty weights", k));
    if (!p.query_labels.empty() && p.query_labels.size() != nq) {
      bad_input("flow", fmt::format("panel {}: {} query labels for {} queries", k, p.query_labels.size(), nq));
    }
    if (!p.key_labels.empty() && p.key_labels.size() != nk) {
      bad_input("flow", fmt::format("panel {}: {} key labels for {} keys", k, p.key_labels.size(), nk));
    }
    for (Eigen::Index i = 0; i < p.weights.size(); ++i) {
      const double w = p.weights.data()[i];
      if (!(w >= 0 && w <= 1)) bad_input("flow", fmt::format("panel {}: weight {} is not in [0, 1]", k, w));
    }
    tokens = std::max({tokens, nq, nk});
    label_chars = std::max({label_chars, longest(p.query_labels), longest(p.key_labels),
                            std::to_string(std::max(nq, nk)).size()});
  }
  check_size("flow", panel_px, panel_px);
  if (!available()) return skipped();

  // Sizes: a row of tokens every 34 px (at least), labels at 11 pt down to 8.
  const double pt = std::clamp(panel_px / 30.0, 9.0, 11.0);
  const int panel_h = std::max(panel_px, static_cast<int>(34 * tokens) + 110);
  const int width = cols * panel_px;
  const auto [title_text, title_pt] = fit_title(title, width - 40.0, pt + 5, pt + 1);
  const bool two_lines = title_text.find('\n') != std::string::npos;
  const int title_px = title.empty() ? 0 : two_lines ? 50 + static_cast<int>(std::lround(title_pt * 1.6)) : 46;
  const int legend_px = 56;  // the band at the bottom that says what a line means
  const int height = rows * panel_h + title_px + legend_px;
  const double top = 1.0 - static_cast<double>(title_px) / height;
  const double legend = static_cast<double>(legend_px) / height;
  const double pw = 1.0 / cols, ph = (top - legend) / rows;

  // x: the query column at 0, the key column at 1, with room for the
  // labels beyond them (in units of the distance between the columns).
  const double label_px = text_px(label_chars, pt) + 16;
  const double inner_px = std::max(40.0, panel_px - 2 * label_px - 24);
  const double side = (label_px + 10) / inner_px;

  std::string body = fmt::format("set multiplot title {} font ',{:.3g}'\n", gq(title_text), title_pt);
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const FlowPanel& p = panels[k];
    const auto nq = static_cast<std::size_t>(p.weights.rows()), nk = static_cast<std::size_t>(p.weights.cols());
    const auto r = static_cast<int>(k) / cols, c = static_cast<int>(k) % cols;
    body += "unset label\nunset arrow\nunset object\nunset key\nunset border\nunset tics\nunset grid\n";
    body += fmt::format("set origin {:.5f},{:.5f}\nset size {:.5f},{:.5f}\n", c * pw, top - (r + 1) * ph, pw, ph);
    body += "set lmargin 0\nset rmargin 0\nset bmargin 0.5\nset tmargin 2.5\n";
    body += title_command(p.title, panel_px - 20.0, pt + 2, pt);
    // Row i at y = -i, the column headings above row 0.
    body += fmt::format("set xrange [{}:{}]\nset yrange [{}:1.1]\n", num(-side), num(1 + side),
                        num(-static_cast<double>(tokens - 1) - 0.6));
    body += fmt::format("set label 1 'query' at 0,0.75 center font ',{:.3g}' tc rgb '#555555'\n", pt);
    body += fmt::format("set label 2 'key' at 1,0.75 center font ',{:.3g}' tc rgb '#555555'\n", pt);
    int tag = 3;
    for (std::size_t i = 0; i < nq; ++i) {
      const std::string text = p.query_labels.empty() ? std::to_string(i) : p.query_labels[i];
      body += fmt::format("set label {} {} at {},{} right font ',{:.3g}' front\n", tag++, gq(text, false),
                          num(-0.06), num(-static_cast<double>(i)), pt);
    }
    for (std::size_t j = 0; j < nk; ++j) {
      const std::string text = p.key_labels.empty() ? std::to_string(j) : p.key_labels[j];
      body += fmt::format("set label {} {} at {},{} left font ',{:.3g}' front\n", tag++, gq(text, false),
                          num(1.06), num(-static_cast<double>(j)), pt);
    }
    // The lines, lightest first, so the strong ones are drawn on top.
    struct Edge {
      std::size_t i, j;
      double w;
    };
    std::vector<Edge> edges;
    for (std::size_t i = 0; i < nq; ++i) {
      for (std::size_t j = 0; j < nk; ++j) {
        const double w = p.weights(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
        if (w >= min_weight && w > 0) edges.push_back({i, j, w});
      }
    }
    std::stable_sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.w < b.w; });
    int arrow = 1;
    for (const Edge& e : edges) {
      body += fmt::format("set arrow {} from 0,{} to 1,{} nohead back lw {:.3g} lc rgb '{}'\n", arrow++,
                          num(-static_cast<double>(e.i)), num(-static_cast<double>(e.j)), 0.6 + 7.0 * e.w,
                          rgb_hex(interpolate(blues(), 0.3 + 0.7 * e.w)));
    }
    std::string nodes;
    for (std::size_t i = 0; i < nq; ++i) nodes += fmt::format("0 {}\n", num(-static_cast<double>(i)));
    for (std::size_t j = 0; j < nk; ++j) nodes += fmt::format("1 {}\n", num(-static_cast<double>(j)));
    const std::string block = fmt::format("$nodes{}", k);
    datablock(body, block, nodes);
    body += "plot " + block + " using 1:2 with points pt 7 ps 1.2 lc rgb '#303030' notitle\n";
  }
  // The legend: sample lines drawn exactly as the panels draw a weight.
  body += "unset label\nunset arrow\nunset object\nunset key\nunset border\nunset tics\nunset grid\nunset title\n";
  body += fmt::format("set origin 0,0\nset size 1,{:.5f}\n", legend);
  body += "set lmargin 0\nset rmargin 0\nset bmargin 0\nset tmargin 0\nset xrange [0:1]\nset yrange [0:1]\n";
  const std::vector<double> samples{std::max(min_weight, 0.1), 0.5, 1.0};
  const double x0 = width > 700 ? 0.30 : 0.05, step = (0.97 - x0) / static_cast<double>(samples.size());
  body += fmt::format("set label 1 'line width and colour: the weight (below {:g}: no line)' at {:.4f},0.78 left "
                      "font ',{:.3g}' tc rgb '#555555'\n",
                      min_weight, x0, pt - 1);
  for (std::size_t k = 0; k < samples.size(); ++k) {
    const double w = samples[k], a = x0 + step * static_cast<double>(k);
    body += fmt::format("set arrow {} from {:.4f},0.32 to {:.4f},0.32 nohead lw {:.3g} lc rgb '{}'\n", k + 1, a,
                        a + 0.45 * step, 0.6 + 7.0 * w, rgb_hex(interpolate(blues(), 0.3 + 0.7 * w)));
    body += fmt::format("set label {} '{}' at {:.4f},0.32 left font ',{:.3g}' tc rgb '#555555'\n", k + 2,
                        fmt::format("{:g}", w),
                        a + 0.5 * step, pt - 1);
  }
  body += "plot NaN notitle\n";
  return render("flow", png_path, width, height, body);
}

}  // namespace sa::plot
