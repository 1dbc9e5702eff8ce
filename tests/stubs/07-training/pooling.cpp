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
  // TODO: one query attends over the rows of X: chapter 3's attention with a
  // single query row. Return the weights and the pooled row.
  SA_TODO("attention_pool",
          "scores of q against every row of X, chapter 3's softmax_rows, a weighted sum of X's rows "
          "(more: ./book hint 7 attention_pool)");
}

PoolGrads attention_pool_backward(const Matrix& X, const RowVector& q, const PoolResult& fwd,
                                  const RowVector& d_pooled) {
  // TODO: the gradients of X and q: through the weighted sum, and through the
  // scores with chapter 3's softmax_backward.
  SA_TODO("attention_pool_backward",
          "X gets gradient along two paths, q along one "
          "(more: ./book hint 7 attention_pool_backward)");
}

}  // namespace sa
