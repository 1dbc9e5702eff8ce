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
  // TODO: causal, and at most `window` keys: i - window < j <= i.
  SA_TODO("sliding_window_mask",
          "refuse seq_len < 1 or window < 1; mask(i, j) = j <= i && j > i - window");
}

Matrix local_attention(const Matrix& Q, const Matrix& K, const Matrix& V, int64_t window) {
  // TODO: each query attends over keys max(0, i - window + 1) .. i only.
  SA_TODO("local_attention",
          "refuse window < 1, rows or d_k that differ, d_k = 0; per query i: scores over its band of keys only, / sqrt(d_k), "
          "stable softmax, times the band's rows of V");
}

Matrix linear_attention(const Matrix& Q, const Matrix& K, const Matrix& V) {
  // TODO: causal linear attention with phi(x) = elu(x) + 1 and running sums S and z.
  SA_TODO("linear_attention",
          "refuse rows that differ, d_k that differ and d_k = 0; phi(x) = x > 0 ? x + 1 : exp(x); for i in order: S += phi(k_i)ᵀ v_i; z += phi(k_i); out_i = phi(q_i) S "
          "/ (phi(q_i) · z)");
}

}  // namespace sa
