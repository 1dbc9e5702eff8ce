// Colours: the palettes of heatmaps, surfaces and flow diagrams, the cycle of
// line and bar colours, the text colour that reads on a cell, and the scale
// that maps a value to a colour identically in C++ and in gnuplot.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

namespace sa::plot::detail {
namespace {

Rgb hex_rgb(std::uint32_t h) {
  return {((h >> 16) & 0xFF) / 255.0, ((h >> 8) & 0xFF) / 255.0, (h & 0xFF) / 255.0};
}

Stops make_stops(std::initializer_list<std::uint32_t> hex) {
  Stops s;
  for (auto h : hex) s.push_back(hex_rgb(h));
  return s;
}

// Line and bar colours (the "tab10" cycle): distinct, print well.
const std::array<const char*, 10> kCycle = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                            "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

constexpr const char* kDarkText = "#1a1a1a";

}  // namespace

std::string rgb_hex(Rgb c) {
  auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 1.0) * 255.0)); };
  return fmt::format("#{:02x}{:02x}{:02x}", byte(c.r), byte(c.g), byte(c.b));
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

const char* cycle_colour(std::size_t i) { return kCycle[i % kCycle.size()]; }

Rgb cycle_rgb(std::size_t i) {
  return hex_rgb(static_cast<std::uint32_t>(std::stoul(cycle_colour(i) + 1, nullptr, 16)));  // past the '#'
}

// Text colour for a cell of colour c: whichever of white and near-black has
// the higher WCAG contrast ratio against it.
const char* text_on(Rgb c) {
  auto lin = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  const double y = 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
  const double dark_y = 0.0103;  // relative luminance of #1a1a1a
  return (1.05 / (y + 0.05)) > ((y + 0.05) / (dark_y + 0.05)) ? "#ffffff" : kDarkText;
}

std::pair<double, double> finite_range(const Matrix& m) {
  double mn = std::numeric_limits<double>::infinity(), mx = -mn;
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    const double v = m.data()[i];
    if (std::isfinite(v)) {
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
  }
  if (!std::isfinite(mn)) mn = 0.0, mx = 1.0;  // everything masked
  return {mn, mx};
}

double ColourScale::position(double v) const {
  v = std::clamp(v, lo, hi);
  if (diverging) {
    const double m = std::max(std::abs(lo), std::abs(hi));
    return 0.5 + 0.5 * v / m;
  }
  return (v - lo) / (hi - lo);
}

Rgb ColourScale::at(double v) const { return interpolate(*stops, position(v)); }

// `set palette defined (value colour, ...)`, in colour-bar units from lo to
// hi: gnuplot rescales the first..last entry onto the cbrange, so the
// palette lines up with the C++ mapping even for a lopsided diverging range.
std::string ColourScale::command() const {
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

}  // namespace sa::plot::detail
