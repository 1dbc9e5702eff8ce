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
  // TODO: for every row, subtract the row's maximum, exponentiate, divide by the row's sum.
  SA_TODO("softmax_rows",
          "refuse NaN and +inf with std::invalid_argument; m = row max; if m is -inf the row is all zeros; "
          "else w_j = exp(x_j - m) / sum_k exp(x_k - m) (exp(-inf) = 0 is the masked weight)");
}

Matrix softmax_backward(const Matrix& P, const Matrix& dP) {
  // TODO: the vector-Jacobian product of softmax, row by row, without building the Jacobian.
  SA_TODO("softmax_backward",
          "for each row: s = sum_j P(i,j) * dP(i,j); then dX(i,j) = P(i,j) * (dP(i,j) - s)");
}

Attention attention(const Matrix& Q, const Matrix& K, const Matrix& V) {
  // TODO: weights = softmax of chapter 2's scaled scores; output = weights times V.
  SA_TODO("attention",
          "Attention a; a.weights = softmax_rows(scaled_scores(Q, K)); a.output = a.weights * V; return a;");
}

std::vector<double> row_entropy(const Matrix& weights) {
  // TODO: H_i = -sum_j w_ij log w_ij for every row, in nats (natural log).
  SA_TODO("row_entropy",
          "accumulate in double and skip entries equal to 0 (0 * log 0 is taken as 0, computing it gives NaN)");
}

double focus(const Matrix& weights) {
  // TODO: the average over rows of each row's largest weight.
  SA_TODO("focus", "sum weights.row(i).maxCoeff() over the rows, divide by weights.rows()");
}

}  // namespace sa
