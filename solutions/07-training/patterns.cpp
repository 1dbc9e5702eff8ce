// Reference solution of chapter 7's pattern analyzer (seed 003). The
// classes and their thresholds are in chapters/07-training/patterns.hpp.
#include "07-training/patterns.hpp"

#include "03-softmax/softmax.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace sa {

PatternStats attention_pattern(const Matrix& weights, int64_t window) {
  if (weights.rows() == 0 || weights.cols() == 0)
    throw std::invalid_argument(fmt::format("attention_pattern: weights of shape {} are empty", shape_str(weights)));
  if (window < 0) throw std::invalid_argument(fmt::format("attention_pattern: window {} is negative", window));
  PatternStats s;
  // Entropy and focus are chapter 3's, averaged over the queries.
  const std::vector<double> H = row_entropy(weights);
  s.entropy = std::accumulate(H.begin(), H.end(), 0.0) / double(H.size());
  s.focus = focus(weights);

  // The diagonal exists up to the shorter side (a query i that has no key
  // i has no self to attend to).
  const int64_t n = std::min(weights.rows(), weights.cols());
  double diagonal = 0.0;
  for (int64_t i = 0; i < n; ++i) diagonal += weights(i, i);
  s.diagonal = diagonal / double(n);

  // The band |j − i| <= window, clipped at the edges: a query near the
  // start or the end has fewer neighbours, and a causal row has none to
  // its right, so the band sums whatever weight lies in it.
  double local = 0.0;
  for (int64_t i = 0; i < weights.rows(); ++i) {
    const int64_t first = std::max<int64_t>(0, i - window);
    const int64_t last = std::min<int64_t>(weights.cols() - 1, i + window);
    if (first <= last) local += weights.row(i).segment(first, last - first + 1).cast<double>().sum();
  }
  s.local = local / double(weights.rows());
  return s;
}

}  // namespace sa
