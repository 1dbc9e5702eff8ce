// Reference solutions of chapter 2.
#include "02-scaling/scaling.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace sa {

Matrix scaled_scores(const Matrix& Q, const Matrix& K) {
  // Row i of Q meets row j of K in one dot product, so both must live in the
  // same d_k-dimensional space. Only the number of rows may differ: a
  // decoder's 10 queries may look at an encoder's 50 keys.
  if (Q.cols() != K.cols())
    throw std::invalid_argument(fmt::format("scaled_scores: Q is {} and K is {}: queries and keys need the same d_k",
                                            shape_str(Q), shape_str(K)));
  // With d_k = 0 every score would be 0 / 0 = NaN.
  if (Q.cols() == 0)
    throw std::invalid_argument(fmt::format("scaled_scores: d_k is 0 (Q is {}, K is {})", shape_str(Q), shape_str(K)));

  // A dot product of d_k terms with unit-variance factors has variance d_k,
  // so its typical size grows like sqrt(d_k). Dividing by sqrt(d_k) brings
  // the variance back to 1 whatever the width. The factor is computed in
  // double and rounded once, as PyTorch does with math.sqrt(d_k).
  const float sqrt_d_k = float(std::sqrt(double(Q.cols())));
  Matrix scores = Q * K.transpose();  // (seq_q, d_k) x (d_k, seq_k)
  scores /= sqrt_d_k;
  return scores;
}

DotStats dot_product_stats(Generator& gen, int64_t d_k, int64_t samples) {
  if (d_k < 1) throw std::invalid_argument(fmt::format("dot_product_stats: d_k must be at least 1, got {}", d_k));
  if (samples < 2)
    throw std::invalid_argument(
        fmt::format("dot_product_stats: need at least 2 samples for a variance, got {}", samples));

  // All of q first, then all of k: the order of torch.randn(samples, d_k)
  // twice, so a PyTorch script with the same seed sees the same vectors.
  const Matrix q = gen.randn(samples, d_k);
  const Matrix k = gen.randn(samples, d_k);

  // Row s of q with row s of k: one dot product per sample. The products
  // are float32 numbers; summing them in double keeps the rounding of a
  // 1024-term sum far below the statistical noise we want to measure.
  std::vector<double> dots(static_cast<size_t>(samples));
  double sum = 0;
  for (int64_t s = 0; s < samples; ++s) {
    double dot = 0;
    for (int64_t j = 0; j < d_k; ++j) dot += double(q(s, j)) * double(k(s, j));
    dots[size_t(s)] = dot;
    sum += dot;
  }
  const double mean = sum / double(samples);

  // Two passes (mean first, then squared deviations) rather than
  // E[x²] − E[x]²: that difference of two nearly equal numbers loses most
  // of its digits when the mean is large next to the spread (here the mean
  // is near 0, but the two passes are right whatever the data). Divide by
  // samples − 1 (unbiased, like torch.var):
  // the deviations are measured from the sample mean, which already sits
  // closer to the data than the true mean does.
  double squares = 0;
  for (double dot : dots) squares += (dot - mean) * (dot - mean);
  const double variance = squares / double(samples - 1);

  // Scaling every sample by 1/sqrt(d_k) scales the mean by 1/sqrt(d_k) and
  // the variance by 1/d_k: theory 0 and d_k becomes 0 and 1.
  DotStats stats;
  stats.mean = mean;
  stats.variance = variance;
  stats.scaled_mean = mean / std::sqrt(double(d_k));
  stats.scaled_variance = variance / double(d_k);
  return stats;
}

}  // namespace sa
