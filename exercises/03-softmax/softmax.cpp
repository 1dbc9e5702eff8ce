// Chapter 3 exercises: write each function, then run `./book check`.
// The declarations and what each must do are in chapters/03-softmax/softmax.hpp.
// Delete the SA_TODO line of a function once you have written it.
#include "03-softmax/softmax.hpp"

#include "02-scaling/scaling.hpp"
#include "sa/exercise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace sa {

Matrix softmax_rows(const Matrix& scores) {
  // TODO: turn every row of scores into weights that are positive and sum to 1,
  // without overflowing exp(); a masked (-inf) score gets weight 0.
  SA_TODO("softmax_rows",
          "subtract each row's maximum before exp(); a row with no finite score becomes zeros "
          "(more: ./book hint 3 softmax_rows)");
}

Matrix softmax_backward(const Matrix& P, const Matrix& dP) {
  // TODO: the gradient of the scores from the gradient of the weights (P = the
  // forward's weights), row by row, without building the Jacobian.
  SA_TODO("softmax_backward",
          "each row needs one extra number: the dot product of P's row with dP's row "
          "(more: ./book hint 3 softmax_backward)");
}

Attention attention(const Matrix& Q, const Matrix& K, const Matrix& V) {
  // TODO: scaled dot-product attention: chapter 2's scaled_scores, then your
  // softmax_rows, then the weighted average of the value rows.
  SA_TODO("attention",
          "the weights come from two functions you already have; the output mixes V's rows with them "
          "(more: ./book hint 3 attention)");
}

std::vector<double> row_entropy(const Matrix& weights) {
  // TODO: the entropy of every row of weights, in nats: how spread out the row is.
  SA_TODO("row_entropy",
          "minus the sum of w log w over the row, natural log; a weight of 0 adds 0 "
          "(more: ./book hint 3 row_entropy)");
}

double focus(const Matrix& weights) {
  // TODO: one number for the matrix: the average over rows of the row's largest
  // weight.
  SA_TODO("focus", "average each row's largest weight (more: ./book hint 3 focus)");
}

}  // namespace sa
