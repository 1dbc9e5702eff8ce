// Reference solutions of chapter 3.
#include "03-softmax/softmax.hpp"

#include "02-scaling/scaling.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace sa {

Matrix softmax_rows(const Matrix& scores) {
  Matrix weights(scores.rows(), scores.cols());
  for (int64_t i = 0; i < scores.rows(); ++i) {
    // The row's maximum, checking every entry on the way: NaN would poison
    // the whole row, and +inf - (+inf) is NaN too, so both are refused.
    float row_max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < scores.cols(); ++j) {
      const float x = scores(i, j);
      if (std::isnan(x) || x == std::numeric_limits<float>::infinity())
        throw std::invalid_argument(
            fmt::format("softmax_rows: scores[{}, {}] is {}; only finite values and -inf (masked) are allowed", i, j,
                        std::isnan(x) ? "nan" : "+inf"));
      row_max = std::max(row_max, x);
    }
    // Every entry is -inf: the query may look at nothing. exp(-inf - -inf)
    // would be NaN; the book returns a row of zeros instead (so the output
    // row becomes 0, not NaN).
    if (row_max == -std::numeric_limits<float>::infinity()) {
      weights.row(i).setZero();
      continue;
    }
    // softmax(x) = softmax(x - c) for any constant c. With c = max(x) every
    // exponent is <= 0, so exp never overflows, and the largest term is
    // exp(0) = 1, so the sum is at least 1 and never underflows to 0.
    // A -inf entry gives exp(-inf) = 0: exactly zero weight.
    double sum = 0.0;
    for (int64_t j = 0; j < scores.cols(); ++j) {
      const float e = std::exp(scores(i, j) - row_max);
      weights(i, j) = e;
      sum += e;
    }
    for (int64_t j = 0; j < scores.cols(); ++j) weights(i, j) = float(weights(i, j) / sum);
  }
  return weights;
}

Matrix softmax_backward(const Matrix& P, const Matrix& dP) {
  if (P.rows() != dP.rows() || P.cols() != dP.cols())
    throw std::invalid_argument(
        fmt::format("softmax_backward: P is {} but dP is {}", shape_str(P), shape_str(dP)));
  // Row by row, J = diag(p) - p pᵀ, so
  //   dx = dpᵀ J = p ∘ dp - p (p · dp) = p ∘ (dp - <p, dp>).
  // One dot product per row instead of an (n, n) Jacobian.
  Matrix dX(P.rows(), P.cols());
  for (int64_t i = 0; i < P.rows(); ++i) {
    double p_dot_dp = 0.0;
    for (int64_t j = 0; j < P.cols(); ++j) p_dot_dp += double(P(i, j)) * double(dP(i, j));
    for (int64_t j = 0; j < P.cols(); ++j) dX(i, j) = float(double(P(i, j)) * (double(dP(i, j)) - p_dot_dp));
  }
  return dX;
}

Attention attention(const Matrix& Q, const Matrix& K, const Matrix& V) {
  if (V.rows() != K.rows())
    throw std::invalid_argument(fmt::format(
        "attention: K has {} rows (keys) but V has {}; every key needs its value", K.rows(), V.rows()));
  // Chapter 2's scaled scores (it checks that Q and K share d_k), then a
  // probability distribution over the keys for every query, then the
  // weighted average of the values.
  Attention result;
  result.weights = softmax_rows(scaled_scores(Q, K));
  result.output = result.weights * V;
  return result;
}

std::vector<double> row_entropy(const Matrix& weights) {
  std::vector<double> H(size_t(weights.rows()), 0.0);
  for (int64_t i = 0; i < weights.rows(); ++i) {
    double h = 0.0;
    for (int64_t j = 0; j < weights.cols(); ++j) {
      const double a = weights(i, j);
      // lim a->0 of a log a is 0; computing it would give 0 * -inf = NaN.
      if (a != 0.0) h -= a * std::log(a);
    }
    H[size_t(i)] = h;
  }
  return H;
}

double focus(const Matrix& weights) {
  if (weights.rows() == 0 || weights.cols() == 0)
    throw std::invalid_argument(fmt::format("focus: weights of shape {} have no rows to average", shape_str(weights)));
  double total = 0.0;
  for (int64_t i = 0; i < weights.rows(); ++i) total += weights.row(i).maxCoeff();
  return total / double(weights.rows());
}

}  // namespace sa
