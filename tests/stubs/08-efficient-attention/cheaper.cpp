// Chapter 8 exercises: two cheaper attentions. Write each function, then run
// `./book check 8`. The declarations and what each must do are in
// chapters/08-efficient-attention/efficient.hpp.
#include "08-efficient-attention/efficient.hpp"

#include "sa/exercise.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sa {

Mask sliding_window_mask(int64_t seq_len, int64_t window) {
  // TODO: causal, and at most `window` keys: a query sees itself and the
  // window - 1 keys before it.
  SA_TODO("sliding_window_mask",
          "the causal mask with the keys too far back forbidden as well "
          "(more: ./book hint 8 sliding_window_mask)");
}

Matrix local_attention(const Matrix& Q, const Matrix& K, const Matrix& V, int64_t window) {
  // TODO: each query attends over its band of recent keys only, computed on the
  // band so the cost grows with seq_len times window.
  SA_TODO("local_attention",
          "per query: the band's scores, a stable softmax over them, the band's values "
          "(more: ./book hint 8 local_attention)");
}

Matrix linear_attention(const Matrix& Q, const Matrix& K, const Matrix& V) {
  // TODO: causal linear attention with phi(x) = elu(x) + 1 and two running sums
  // (the header has the formula).
  SA_TODO("linear_attention",
          "phi of queries and keys instead of exp of their product; running sums over the keys seen "
          "(more: ./book hint 8 linear_attention)");
}

}  // namespace sa
