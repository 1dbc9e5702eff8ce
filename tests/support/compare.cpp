#include "support/compare.hpp"

#include "support/catch2_compat.hpp"
#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace sa::test {

namespace {

// How far past the tolerance one element is; <= 0 means it passes.
double excess(double a, double e, Tolerance tol) {
  if (std::isnan(e)) return std::isnan(a) ? 0.0 : std::numeric_limits<double>::infinity();
  if (std::isnan(a)) return std::numeric_limits<double>::infinity();
  if (std::isinf(e) || std::isinf(a)) return a == e ? 0.0 : std::numeric_limits<double>::infinity();
  return std::abs(a - e) - (tol.atol + tol.rtol * std::abs(e));
}

std::string tolerance_str(Tolerance tol) {
  if (tol.atol == 0.0 && tol.rtol == 0.0) return "tolerance: bit for bit";
  return fmt::format("tolerance {:.0e} + {:.0e} * |expected|", tol.atol, tol.rtol);
}

// Finds the worst element of two equally long buffers; index_str names it.
template <typename IndexStr>
void compare_values(std::string_view what, const float* a, const float* e, int64_t n, Tolerance tol,
                    IndexStr index_str) {
  int64_t worst = -1;
  double worst_excess = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = excess(a[i], e[i], tol);
    if (x > worst_excess || (worst < 0 && x > 0)) {
      worst = i;
      worst_excess = x;
    }
  }
  if (worst < 0) {
    SUCCEED();
    return;
  }
  const double err = std::abs(double(a[worst]) - double(e[worst]));
  FAIL(fmt::format("{}: largest error {:.3g} at {} (got {:.9g}, expected {:.9g}); {}", what, err,
                   index_str(worst), a[worst], e[worst], tolerance_str(tol)));
}

}  // namespace

void require_shape(std::string_view what, const Shape& actual, const Shape& expected) {
  if (actual != expected)
    FAIL(fmt::format("{}: shape {}, expected {}", what, shape_str(actual), shape_str(expected)));
  SUCCEED();
}

void check_close(std::string_view what, double actual, double expected, Tolerance tol) {
  if (excess(actual, expected, tol) <= 0.0) {
    SUCCEED();
    return;
  }
  FAIL_CHECK(fmt::format("{}: got {:.9g}, expected {:.9g} (error {:.3g}); {}", what, actual, expected,
                         std::abs(actual - expected), tolerance_str(tol)));
}

void require_shape(std::string_view what, const Matrix& actual, int64_t rows, int64_t cols) {
  require_shape(what, Shape{actual.rows(), actual.cols()}, Shape{rows, cols});
}

void require_close(std::string_view what, const Matrix& actual, const Matrix& expected, Tolerance tol) {
  require_shape(what, actual, expected.rows(), expected.cols());
  const int64_t cols = expected.cols();
  compare_values(what, actual.data(), expected.data(), expected.size(), tol,
                 [cols](int64_t i) { return fmt::format("[{}, {}]", i / cols, i % cols); });
}

void require_close(std::string_view what, const Matrix& actual, const Matrix& expected, Tolerance tol,
                   const std::function<std::string(int64_t row, int64_t col)>& where) {
  require_shape(what, actual, expected.rows(), expected.cols());
  const int64_t cols = expected.cols();
  compare_values(what, actual.data(), expected.data(), expected.size(), tol,
                 [&](int64_t i) { return where(i / cols, i % cols); });
}

void require_close(std::string_view what, const std::vector<float>& actual, const std::vector<float>& expected,
                   Tolerance tol) {
  require_shape(what, Shape{int64_t(actual.size())}, Shape{int64_t(expected.size())});
  compare_values(what, actual.data(), expected.data(), int64_t(expected.size()), tol,
                 [](int64_t i) { return fmt::format("[{}]", i); });
}

void require_mask(std::string_view what, const Mask& actual, const Mask& expected) {
  if (actual.rows() != expected.rows() || actual.cols() != expected.cols())
    FAIL(fmt::format("{}: shape ({}, {}), expected ({}, {})", what, actual.rows(), actual.cols(), expected.rows(),
                     expected.cols()));
  for (int64_t i = 0; i < actual.rows(); ++i)
    for (int64_t j = 0; j < actual.cols(); ++j)
      if (actual(i, j) != expected(i, j))
        FAIL(fmt::format("{}: entry [{}, {}] is {}, expected {}", what, i, j, actual(i, j) ? "allowed" : "forbidden",
                         expected(i, j) ? "allowed" : "forbidden"));
  SUCCEED();
}

}  // namespace sa::test
