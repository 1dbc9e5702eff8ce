// Chapter 2 exercises: write each function, then run `./book check`.
// The declarations and what each must do are in chapters/02-scaling/scaling.hpp.
// Delete the SA_TODO line of a function once you have written it.
#include "02-scaling/scaling.hpp"

#include "sa/exercise.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace sa {

Matrix scaled_scores(const Matrix& Q, const Matrix& K) {
  // TODO: the (seq_q, seq_k) matrix Q Kᵀ divided by sqrt(d_k), where d_k = Q.cols().
  SA_TODO("scaled_scores",
          "refuse Q.cols() != K.cols() with std::invalid_argument; then Matrix scores = Q * K.transpose(); "
          "divide by float(std::sqrt(double(d_k)))");
}

DotStats dot_product_stats(Generator& gen, int64_t d_k, int64_t samples) {
  // TODO: draw q and k, take one dot product per row, and return the mean and
  // unbiased variance of the dot products, raw and divided by sqrt(d_k).
  SA_TODO("dot_product_stats",
          "refuse d_k < 1 or samples < 2 (std::invalid_argument); q = gen.randn(samples, d_k), THEN "
          "k = gen.randn(samples, d_k); sum q(s,j)*k(s,j) in double; variance divides by samples - 1; "
          "scaled: mean / sqrt(d_k), variance / d_k");
}

}  // namespace sa
