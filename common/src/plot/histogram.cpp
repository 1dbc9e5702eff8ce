// Histograms (sa::plot::histogram): samples counted into bins, series
// overlaid on shared bins, or each in a panel of its own (own_axes).

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sa::plot {

using namespace detail;

namespace {

// Samples counted into `bins` equal bins from lo to hi (a single value gets
// a bin 1 wide around it); non-finite samples are left out.
struct Bins {
  double lo, hi, width;
  std::vector<double> counts;
  double peak = 0;  // the largest count
};

Bins count_bins(const std::vector<double>& samples, double lo, double hi, int bins) {
  if (lo == hi) lo -= 0.5, hi += 0.5;
  const auto nb = static_cast<std::size_t>(bins);
  Bins b{lo, hi, (hi - lo) / static_cast<double>(nb), std::vector<double>(nb, 0.0)};
  for (double x : samples) {
    if (!std::isfinite(x)) continue;
    b.peak = std::max(b.peak, ++b.counts[std::min(static_cast<std::size_t>((x - lo) / b.width), nb - 1)]);
  }
  return b;
}

// Writes series k's bins into the script as the datablock $hist<k> (bin
// centre, count) and returns their plot clause, in colour k, without a
// legend entry. Semi-transparent fill so overlapping histograms both stay
// visible.
std::string bins_plot(std::string& s, const Bins& b, std::size_t k) {
  std::string data;
  for (std::size_t i = 0; i < b.counts.size(); ++i) {
    data += fmt::format("{} {}\n", num(b.lo + (i + 0.5) * b.width), b.counts[i]);
  }
  const std::string block = fmt::format("$hist{}", k);
  datablock(s, block, data);
  return fmt::format("{} using 1:2:({}) with boxes fs transparent solid 0.4 border lc rgb '{}' lw 1.2 lc rgb '{}'",
                     block, num(b.width), cycle_colour(k), cycle_colour(k));
}

// Histogram::own_axes: one panel per series, each binned over its own range.
std::string histogram_panels(const std::string& png_path, const Histogram& h, int width, int height) {
  const auto n = h.series.size();
  const double top = h.title.empty() ? 1.0 : 1.0 - 50.0 / height;
  const double pw = 1.0 / static_cast<double>(n);
  std::string s = kChartStyle;
  s += "unset key\n";
  s += page_title(h.title, width, 15, 11, 50).command;
  for (std::size_t k = 0; k < n; ++k) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double x : h.series[k].x)
      if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    const Bins bins = count_bins(h.series[k].x, lo, hi, h.bins);
    const std::string clause = bins_plot(s, bins, k);
    s += fmt::format("set origin {:.5f},0\nset size {:.5f},{:.5f}\n", static_cast<double>(k) * pw, pw, top);
    s += title_command(h.series[k].name, width * pw - 60.0, 13, 10);
    s += "set xlabel " + gq(h.xlabel) + "\nset ylabel " + gq(k == 0 ? h.ylabel : "") + "\n";
    s += fmt::format("set xrange [{}:{}]\nset yrange [0:{}]\n", num(bins.lo - bins.width), num(bins.hi + bins.width),
                     num(bins.peak * 1.08));
    s += "plot " + clause + " notitle\n";
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

  // Shared bins over all samples: every series uses the same edges, so the
  // overlaid bars line up.
  std::vector<Bins> bins;
  double top = 0;
  for (const Series& se : h.series) {
    bins.push_back(count_bins(se.x, lo, hi, h.bins));
    top = std::max(top, bins.back().peak);
  }
  const Bins& edges = bins.front();

  const Axis xa = {edges.lo - edges.width, edges.hi + edges.width, false}, ya = {0, top * 1.08, false};
  std::string s = kChartStyle;
  s += title_command(h.title, width - 90.0, 15, 11);
  s += "set xlabel " + gq(h.xlabel) + "\nset ylabel " + gq(h.ylabel) + "\n";
  s += "set xrange " + xa.range() + "\nset yrange " + ya.range() + "\n";
  // The legend avoids the bars (each a box from 0 up to its count).
  Occupancy occ;
  std::vector<std::string> names;
  for (std::size_t k = 0; k < bins.size(); ++k) {
    if (!h.series[k].name.empty()) names.push_back(h.series[k].name);
    for (std::size_t b = 0; b < bins[k].counts.size(); ++b) {
      if (bins[k].counts[b] <= 0) continue;
      const double b0 = edges.lo + static_cast<double>(b) * edges.width;
      occ.box({xa.frac(b0), 0, xa.frac(b0 + edges.width), ya.frac(bins[k].counts[b])});
    }
  }
  const Frame frame = chart_frame(width, height, !h.title.empty(), !h.xlabel.empty());
  s += names.empty() ? std::string("unset key\n") : "set key " + key_place(occ, frame, key_size(names)) + "\n";

  std::string plot = "plot ";
  for (std::size_t k = 0; k < bins.size(); ++k) {
    plot += (k ? ", \\\n     " : "") + bins_plot(s, bins[k], k) + " " + title_clause(h.series[k].name);
  }
  s += plot + "\n";
  return render("histogram", png_path, width, height, s);
}

}  // namespace sa::plot
