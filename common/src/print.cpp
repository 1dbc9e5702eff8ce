#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace sa {

void chapter_title(std::string_view title) {
  fmt::print("\n{}\n{}\n", title, std::string(title.size(), '='));
}

void step(int number, std::string_view title) {
  std::string head = fmt::format("Step {}. {}", number, title);
  fmt::print("\n{}\n{}\n", head, std::string(head.size(), '-'));
}

void say(std::string_view text) {
  // Greedy word wrap at 78 columns, indented by 2 like the values around it;
  // a blank line in `text` starts a new paragraph.
  constexpr size_t width = 76;
  std::istringstream in{std::string(text)};
  std::string line, out, word;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) {
      out += "\n";
      continue;
    }
    std::istringstream words(line);
    std::string current;
    while (words >> word) {
      if (!current.empty() && current.size() + 1 + word.size() > width) {
        out += "  " + current + "\n";
        current.clear();
      }
      current += (current.empty() ? "" : " ") + word;
    }
    out += "  " + current + "\n";
  }
  fmt::print("{}", out);
}

void gap() { fmt::print("\n"); }

std::string format_value(double v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}f}", v, precision);
}

std::string rounding(double difference, double bound) {
  // "1e-6", not fmt's "1e-06": a bound is a round number, written as in the text.
  const int exponent = int(std::floor(std::log10(bound) + 1e-9));
  const double mantissa = bound / std::pow(10.0, exponent);
  const std::string b = std::abs(mantissa - std::round(mantissa)) < 1e-9
                            ? fmt::format("{}e{}", std::lround(mantissa), exponent)
                            : fmt::format("{:g}", bound);
  if (std::abs(difference) <= bound) return "below " + b;
  return fmt::format("{:.1e}, above the rounding bound {}", difference, b);
}

double rounding_bound(double scale) {
  if (!(scale > 1)) return 1e-6;  // also for NaN: the difference will show it
  return std::pow(10.0, std::ceil(std::log10(1e-6 * scale) - 1e-9));
}

namespace {

// Fixed point with `precision` decimals unless that would hide the values:
// switch to scientific notation when the largest magnitude is huge, or so
// small that every entry would print as 0.0000. (torch also switches when
// the range is wide; a book reads better with fixed point there.)
bool needs_scientific(const Matrix& m, int precision) {
  double largest = 0.0;
  for (int64_t i = 0; i < m.size(); ++i) {
    const double a = std::abs(double(m.data()[i]));
    if (std::isfinite(a)) largest = std::max(largest, a);
  }
  return largest >= 1e6 || (largest > 0.0 && largest < std::pow(10.0, -precision + 1));
}

// Indices to show along one axis: all, or the first and last `edge` with -1
// standing for the "..." gap.
std::vector<int64_t> shown_indices(int64_t n, int64_t max_n, int64_t edge) {
  std::vector<int64_t> idx;
  if (n <= max_n) {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  for (int64_t i = 0; i < edge; ++i) idx.push_back(i);
  idx.push_back(-1);
  for (int64_t i = n - edge; i < n; ++i) idx.push_back(i);
  return idx;
}

}  // namespace

std::string format_matrix(const Matrix& m, const PrintOptions& opt) {
  if (m.size() == 0) return std::string(opt.indent, ' ') + "[]\n";
  const bool sci = needs_scientific(m, opt.precision);
  auto cell = [&](float v) {
    if (!std::isfinite(v)) return format_value(v, opt.precision);
    return sci ? fmt::format("{:.{}e}", v, opt.precision) : fmt::format("{:.{}f}", v, opt.precision);
  };
  const auto rows = shown_indices(m.rows(), opt.max_rows, opt.edge);
  const auto cols = shown_indices(m.cols(), opt.max_cols, opt.edge);
  size_t width = 3;
  for (int64_t r : rows)
    for (int64_t c : cols)
      if (r >= 0 && c >= 0) width = std::max(width, cell(m(r, c)).size());

  std::string out;
  const std::string pad(opt.indent, ' ');
  for (size_t i = 0; i < rows.size(); ++i) {
    out += pad + (i == 0 ? "[[" : " [");
    if (rows[i] < 0) {
      out += "...]\n";
      continue;
    }
    for (size_t j = 0; j < cols.size(); ++j) {
      const std::string text = cols[j] < 0 ? "..." : cell(m(rows[i], cols[j]));
      out += fmt::format("{:>{}}", text, width);
      if (j + 1 < cols.size()) out += ", ";
    }
    out += i + 1 == rows.size() ? "]]\n" : "],\n";
  }
  return out;
}

void print_shape(std::string_view name, const Shape& shape, std::string_view comment) {
  if (comment.empty())
    fmt::print("  {}  shape {}\n", name, shape_str(shape));
  else
    fmt::print("  {}  shape {}   {}\n", name, shape_str(shape), comment);
}

void print_tensor(std::string_view name, const Matrix& m, const Shape& shown, const PrintOptions& opt) {
  print_shape(name, shown.empty() ? Shape{m.rows(), m.cols()} : shown);
  std::string text = format_matrix(m, opt);
  // A 1-D tensor prints with one pair of brackets, as torch prints it.
  if (shown.size() == 1 && m.rows() == 1) {
    text.erase(text.find("[["), 1);
    text.erase(text.rfind("]]"), 1);
  }
  fmt::print("{}", text);
}

void print_labelled(std::string_view name, const Matrix& m, const std::vector<std::string>& row_labels,
                    const std::vector<std::string>& col_labels, const PrintOptions& opt, const Shape& shown) {
  print_shape(name, shown.empty() ? Shape{m.rows(), m.cols()} : shown, opt.axes);
  fmt::print("{}", format_labelled(m, row_labels, col_labels, opt));
}

std::string format_labelled(const Matrix& m, const std::vector<std::string>& row_labels,
                            const std::vector<std::string>& col_labels, const PrintOptions& opt) {
  // (Labelled tables are shown whole further than print_tensor's: their
  // labels say which rows and columns they are.)
  const std::vector<int64_t> rows = shown_indices(m.rows(), 32, 12), cols = shown_indices(m.cols(), 16, 6);
  auto row_label = [&](int64_t r) {
    return r < 0 ? std::string("...") : r < int64_t(row_labels.size()) ? row_labels[r] : std::to_string(r);
  };
  auto col_label = [&](int64_t c) {
    return c < 0 ? std::string("...") : c < int64_t(col_labels.size()) ? col_labels[c] : std::to_string(c);
  };
  size_t label_w = 0, width = 6;
  for (int64_t r : rows) label_w = std::max(label_w, row_label(r).size());
  for (int64_t c : cols) width = std::max(width, col_label(c).size());
  for (int64_t r : rows)
    for (int64_t c : cols)
      if (r >= 0 && c >= 0) width = std::max(width, format_value(m(r, c), opt.precision).size());
  const std::string pad(opt.indent, ' ');
  std::string out = pad + std::string(label_w, ' ');
  for (int64_t c : cols) out += fmt::format("  {:>{}}", col_label(c), width);
  out += "\n";
  for (int64_t r : rows) {
    out += pad + fmt::format("{:>{}}", row_label(r), label_w);
    for (int64_t c : cols)
      out += fmt::format("  {:>{}}", r < 0 || c < 0 ? std::string("...") : format_value(m(r, c), opt.precision), width);
    out += "\n";
  }
  return out;
}

std::string text_bar(double fraction, int width) {
  const int n = int(std::lround(fraction * width));
  return std::string(size_t(std::max(0, n)), '#') + std::string(size_t(std::max(0, width - n)), '.');
}

std::string format_row(const Matrix& m, int64_t row, int precision) {
  std::string s = "[";
  for (int64_t j = 0; j < m.cols(); ++j) s += (j ? ", " : "") + format_value(m(row, j), precision);
  return s + "]";
}

// (The 1e-9 keeps a number that is already a bound, 0.5 computed as
// 0.50000000001, from moving to the next digit.)
double bound_above(double x, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::ceil(x * scale - 1e-9) / scale;
}
double bound_below(double x, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::floor(x * scale + 1e-9) / scale;
}

std::string count_of(int64_t n, std::string_view noun, std::string_view plural) {
  if (n == 1) return fmt::format("1 {}", noun);
  return plural.empty() ? fmt::format("{} {}s", n, noun) : fmt::format("{} {}", n, plural);
}

std::string bytes_str(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.1f} KiB", bytes / 1024.0);
}

}  // namespace sa
