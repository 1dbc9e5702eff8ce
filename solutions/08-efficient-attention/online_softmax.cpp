// Reference solutions of chapter 8: online softmax.
#include "08-efficient-attention/efficient.hpp"

#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace sa {

void online_softmax_update(OnlineSoftmax& state, float x) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (std::isnan(x) || x == inf)
    throw std::invalid_argument(fmt::format(
        "online_softmax_update: score is {}; only finite values and -inf (masked) are allowed", std::isnan(x) ? "nan" : "+inf"));
  // A masked key adds exp(-inf) = 0 and cannot raise the maximum. Skipping
  // it also avoids exp(-inf - -inf) = NaN while the state is still empty.
  if (x == -inf) return;
  if (x > state.max) {
    // Every term summed so far was exp(x_j - old max). Against the new
    // maximum it is exp(x_j - new) = exp(x_j - old) * exp(old - new): one
    // factor rescales the whole sum. (exp(-inf) = 0 for an empty state.)
    state.sum = state.sum * std::exp(state.max - x) + 1.0f;  // exp(x - x) = 1
    state.max = x;
  } else {
    state.sum += std::exp(x - state.max);
  }
}

Matrix online_softmax_rows(const Matrix& scores) {
  Matrix weights(scores.rows(), scores.cols());
  for (int64_t i = 0; i < scores.rows(); ++i) {
    OnlineSoftmax state;
    for (int64_t j = 0; j < scores.cols(); ++j) online_softmax_update(state, scores(i, j));
    // Only -inf in the row (or no entries): the book's choice of chapter 3,
    // a row of zeros rather than 0 / 0.
    if (state.sum == 0.0f) {
      weights.row(i).setZero();
      continue;
    }
    for (int64_t j = 0; j < scores.cols(); ++j) weights(i, j) = std::exp(scores(i, j) - state.max) / state.sum;
  }
  return weights;
}

}  // namespace sa
