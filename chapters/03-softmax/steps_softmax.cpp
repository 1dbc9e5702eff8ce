// Chapter 3, steps 5 and 6: softmax itself. Why it subtracts the row
// maximum first (and what it does with -inf, giant logits and NaN), and what
// a temperature does to its weights.
#include "03-softmax/steps.hpp"

#include "03-softmax/softmax.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace sa::ch3 {

Matrix row_matrix(const std::vector<float>& values) {
  Matrix m(1, int64_t(values.size()));
  for (size_t j = 0; j < values.size(); ++j) m(0, int64_t(j)) = values[j];
  return m;
}

void subtract_the_maximum() {
  say("  In float32, exp(x) overflows to inf for x above 88.7 and underflows to 0 below about -103. The "
      "textbook formula therefore fails on rows that are perfectly reasonable once shifted:");
  // The formula straight from the definition, kept here only to show it
  // breaking. Never use it: softmax_rows is the stable version.
  auto naive_softmax = [](const Matrix& x) {
    Matrix e = x.array().exp();
    return Matrix(e / e.sum());
  };
  for (const std::vector<float>& values : {std::vector<float>{1000, 999, 998}, std::vector<float>{-1000, -999, -998}}) {
    const Matrix x = row_matrix(values);
    const Matrix e = x.array().exp();
    fmt::print("  x = {}\n", format_row(x, 0, 0));
    fmt::print("    naive   exp(x) = {}, sum {} -> {}\n", format_row(e, 0, 0), format_value(e.sum(), 0),
               format_row(naive_softmax(x)));
    fmt::print("    stable  exp(x - max) = {} -> {}\n", format_row(Matrix((x.array() - x.maxCoeff()).exp())),
               format_row(softmax_rows(x)));
  }
  say("  softmax(x) = softmax(x - c) for any constant c, because exp(x_j - c) = exp(x_j) exp(-c) and the "
      "factor exp(-c) cancels between numerator and sum. With c = max(x) every exponent is <= 0 (no overflow) "
      "and the largest term is exp(0) = 1 (the sum cannot underflow to 0). Both rows above are [0, -1, -2] "
      "after the shift, hence the same weights.");
  const float inf = std::numeric_limits<float>::infinity();
  auto edge_case = [](std::string_view what, std::string_view call, const Matrix& x, std::string_view note) {
    fmt::print("  {:<17} {:<27} = {}{}\n", what, call, format_row(softmax_rows(x)), note);
  };
  edge_case("a masked entry:", "softmax([2, -inf, 1])", row_matrix({2.0f, -inf, 1.0f}), "   (exactly 0)");
  edge_case("giant logits:", "softmax([1e30, -1e30, 0])", row_matrix({1e30f, -1e30f, 0.0f}), "");
  edge_case("nothing visible:", "softmax([-inf, -inf, -inf])", row_matrix({-inf, -inf, -inf}),
            "\n    (a query allowed to see no key: the book's choice is zeros; PyTorch 1.13 gives nan)");
  try {
    softmax_rows(row_matrix({1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f}));
  } catch (const std::invalid_argument& e) {
    fmt::print("  a NaN score is refused: \"{}\"\n", e.what());
  }
}

std::vector<double> show_temperatures(const Options& o) {
  std::vector<double> temperatures = kTemperatures;
  if (std::find(temperatures.begin(), temperatures.end(), o.temperature) == temperatures.end()) {
    temperatures.push_back(o.temperature);
    std::sort(temperatures.begin(), temperatures.end());
  }
  const Matrix x_t = row_matrix(kTemperatureRow);
  fmt::print("  x = {}\n", format_row(x_t, 0, 1));
  for (double T : temperatures) {
    const Matrix w = softmax_rows(x_t / float(T));
    fmt::print("  T = {:<5g} {}   largest {:.4f}{}\n", T, format_row(w), w.maxCoeff(),
               T == o.temperature ? "   <- --temperature" : "");
  }
  say("  Dividing by T > 1 shrinks the gaps between logits and flattens the weights toward uniform (1/6 = "
      "0.1667 each); T < 1 stretches the gaps and sharpens them toward one-hot. The order of the weights never "
      "changes. Dividing by sqrt(d_k) is a temperature too: T = sqrt(d_k), chosen so that scores have "
      "variance 1 whatever d_k is.");
  return temperatures;
}

}  // namespace sa::ch3
