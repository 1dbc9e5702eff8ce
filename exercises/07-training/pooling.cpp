// Chapter 7 exercises, task 3: attention pooling. Write each function, then
// run `./book check 7`. The declarations and what each must do are in
// chapters/07-training/pooling.hpp.
#include "07-training/pooling.hpp"

#include "03-softmax/softmax.hpp"
#include "sa/exercise.hpp"

#include <cmath>
#include <stdexcept>

namespace sa {

PoolResult attention_pool(const Matrix& X, const RowVector& q) {
  // TODO: one query over the rows of X: weights = softmax(X qᵀ / sqrt(d)), pooled = weights X.
  SA_TODO("attention_pool",
          "refuse X without rows, d = 0, or q of another width (std::invalid_argument); scores = q Xᵀ / sqrt(d) "
          "(1, n); weights = softmax_rows(scores) (chapter 3); pooled = weights X (1, d)");
}

PoolGrads attention_pool_backward(const Matrix& X, const RowVector& q, const PoolResult& fwd,
                                  const RowVector& d_pooled) {
  // TODO: the gradients of X and q, through the weighted sum and through the scores.
  SA_TODO("attention_pool_backward",
          "refuse shapes that do not fit; dX = weightsᵀ d_pooled; d_weights = d_pooled Xᵀ; d_scores = "
          "softmax_backward(weights, d_weights) / sqrt(d); dq = d_scores X; dX += d_scoresᵀ q");
}

}  // namespace sa
