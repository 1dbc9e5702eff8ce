// Reference solutions of chapter 7, task 3: attention pooling.
#include "07-training/pooling.hpp"

#include "03-softmax/softmax.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>

namespace sa {

PoolResult attention_pool(const Matrix& X, const RowVector& q) {
  if (X.rows() == 0 || X.cols() == 0 || q.size() != X.cols())
    throw std::invalid_argument(fmt::format(
        "attention_pool: X is {} and q has {} columns; need at least one row, d > 0, and q as wide as X's rows",
        shape_str(X), q.size()));
  // One query against n keys: chapter 3's attention with a single row.
  const Matrix scores = (q * X.transpose()) / std::sqrt(float(X.cols()));
  PoolResult r;
  r.weights = softmax_rows(scores);
  r.pooled = r.weights * X;
  return r;
}

PoolGrads attention_pool_backward(const Matrix& X, const RowVector& q, const PoolResult& fwd,
                                  const RowVector& d_pooled) {
  if (X.rows() == 0 || X.cols() == 0 || q.size() != X.cols() || fwd.weights.size() != X.rows() ||
      fwd.pooled.size() != X.cols() || d_pooled.size() != X.cols())
    throw std::invalid_argument(fmt::format(
        "attention_pool_backward: X {}, q {}, weights {}, pooled {}, d_pooled {}: they do not fit together",
        shape_str(X), q.size(), fwd.weights.size(), fwd.pooled.size(), d_pooled.size()));
  const float scale = 1.0f / std::sqrt(float(X.cols()));
  PoolGrads g;
  // pooled = w X: each row X_j gets w_j d_pooled; each weight gets X_j · d_pooled.
  g.dX = fwd.weights.transpose() * d_pooled;
  const Matrix d_weights = d_pooled * X.transpose();
  // Through the softmax (chapter 3), then scores = q Xᵀ / sqrt(d).
  const Matrix d_scores = softmax_backward(fwd.weights, d_weights) * scale;
  g.dq = d_scores * X;
  g.dX.noalias() += d_scores.transpose() * q;
  return g;
}

}  // namespace sa
