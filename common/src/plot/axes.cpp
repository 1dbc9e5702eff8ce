// Axes: which tics to show and how to label them -- tokens and categories
// (tic_list), log axes (log_tics, power_of_two_tics) -- and the range a 2-D
// chart draws (padded_axis), always set by us, never autoscaled.

#include "detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace sa::plot::detail {

// ---- Category tics ------------------------------------------------------------------

// Which of n tics to label. Token labels: all of them up to max_shown, then
// every k-th. Indices only (no labels): a round step (1, 2, 4, 5, 8, 10, 16,
// ...) giving at most 16 numbers, so 64 positions read 0, 8, 16, ...
std::size_t tic_stride(bool have_labels, std::size_t n, std::size_t max_shown) {
  if (have_labels) return n <= max_shown ? 1 : (n + max_shown - 1) / max_shown;
  for (std::size_t base = 1;; base *= 10) {
    for (std::size_t step : {base, 2 * base, 4 * base, 5 * base, 8 * base}) {
      if (n <= 16 * step) return step;
    }
  }
}

// Explicit tic labels `set xtics ('the' 0, 'cat' 1, ...)` at 0..n-1 (see
// tic_stride for which are shown). Without labels the indices are shown.
std::string tic_list(const std::vector<std::string>& labels, std::size_t n, std::size_t max_shown) {
  const std::size_t stride = tic_stride(!labels.empty(), n, max_shown);
  std::string s = "(";
  for (std::size_t i = 0; i < n; i += stride) {
    s += fmt::format("{}{} {}", i ? ", " : "", labels.empty() ? gq(std::to_string(i)) : gq(labels[i], false), i);
  }
  return s + ")";
}

// ---- Numeric axes -------------------------------------------------------------------

// (fmt rather than "[" + num(lo) + ...: the same text, without GCC 12's
// false -Wrestrict warning on `const char* + std::string&&` at -O3.)
std::string Axis::range() const { return fmt::format("[{}:{}]", num(lo), num(hi)); }

// The range to draw for data spanning lo..hi (finite; > 0 on a log axis):
// the given ends where there are any; each other end is the data's end plus
// `air` of the drawn span, so no point sits on the border and no marker is
// cut in half. On a log axis the air is taken in log space, i.e. a factor
// (3% of 4..1024 is a factor 1.18), and the tics stay at the data's values.
Axis padded_axis(double lo, double hi, bool log, double air, std::optional<double> given_lo,
                 std::optional<double> given_hi) {
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

namespace {

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

}  // namespace

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

}  // namespace sa::plot::detail
