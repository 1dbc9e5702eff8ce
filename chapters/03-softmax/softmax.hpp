// Chapter 3: from scores to attention weights, and attention itself.
//
// The functions this chapter teaches. solutions/03-softmax/softmax.cpp holds
// the reference; exercises/03-softmax/softmax.cpp is yours to write.
#pragma once

#include "sa/tensor.hpp"

#include <vector>

namespace sa {

// Softmax of every row (along the key dimension, dim=-1), computed stably by
// subtracting the row's maximum first, so logits of ±1e30 give finite
// weights.
//  - A -inf entry gets weight exactly 0 (that is how masks work, chapter 5).
//  - A row that is entirely -inf (a query allowed to see nothing) gets all
//    zeros, not NaN: the book's choice; PyTorch 1.13 returns NaN there.
//  - A NaN or +inf entry is refused with std::invalid_argument.
Matrix softmax_rows(const Matrix& scores);

// Backward of softmax_rows, the vector-Jacobian product: given the weights
// P = softmax(X) and the gradient dP of a loss with respect to P, returns
//   dX = P ∘ (dP − rowsum(P ∘ dP))
// row by row, i.e. dPᵀ·J with J = diag(p) − p pᵀ, without building J.
// P and dP of different shapes are refused with std::invalid_argument.
Matrix softmax_backward(const Matrix& P, const Matrix& dP);

struct Attention {
  Matrix output;   // (seq_q, d_v) = weights · V
  Matrix weights;  // (seq_q, seq_k), every row sums to 1
};

// Scaled dot-product attention: weights = softmax(Q Kᵀ / sqrt(d_k)),
// output = weights · V. Q (seq_q, d_k), K (seq_k, d_k), V (seq_k, d_v).
// K and V with different numbers of rows are refused with
// std::invalid_argument (as scaled_scores refuses Q and K of different d_k).
Attention attention(const Matrix& Q, const Matrix& K, const Matrix& V);

// H = −Σ_j α_j log α_j of every row, in nats, with 0·log 0 = 0 (a uniform
// row over n keys has log n; a one-hot row has 0).
std::vector<double> row_entropy(const Matrix& weights);

// Mean over rows of the largest weight in the row (1/n for uniform rows, 1
// for one-hot rows). Weights with no rows or no columns are refused with
// std::invalid_argument: there is nothing to average.
double focus(const Matrix& weights);

}  // namespace sa
