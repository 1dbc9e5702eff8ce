// Chapter 4 exercises: write each function, then run `./book check`.
// The declarations and what each must do are in chapters/04-multi-head/multihead.hpp.
// Delete the SA_TODO line of a function once you have written it.
//
// Reminder of the layout: a batch of `batch` sequences is a Matrix of
// batch * seq rows, sequence b in rows [b * seq, (b + 1) * seq). Head h of
// a (.., d_model) matrix is its d_k = d_model / n_heads columns starting
// at h * d_k.
#include "04-multi-head/multihead.hpp"

#include "01-qkv-projection/qkv.hpp"
#include "sa/exercise.hpp"

#include <stdexcept>

namespace sa {

Tensor4 split_heads(const Matrix& X, int64_t batch, int64_t n_heads) {
  // TODO: refuse bad sizes, then copy each (sequence, head) rectangle of X into its own view.
  SA_TODO("split_heads",
          "throw std::invalid_argument unless batch >= 1, n_heads >= 1, X.rows() % batch == 0 and "
          "X.cols() % n_heads == 0; then seq = X.rows() / batch, d_k = X.cols() / n_heads, "
          "Tensor4 T(batch, n_heads, seq, d_k) and T.view(b, h) = X.block(b * seq, h * d_k, seq, d_k)");
}

Matrix combine_heads(const Tensor4& heads) {
  // TODO: the inverse of split_heads: every head back into its column block.
  SA_TODO("combine_heads",
          "Matrix X(heads.batch() * heads.seq(), heads.heads() * heads.dim()); "
          "X.block(b * seq, h * d_k, seq, d_k) = heads.view(b, h) for every b and h");
}

MultiHead multi_head_attention(const Matrix& X_q, const Matrix& X_kv, int64_t batch, const AttentionParams& params,
                               int64_t n_heads, const HeadAttention& head) {
  // TODO: project, split, attend per (sequence, head), combine, project with W_o.
  SA_TODO("multi_head_attention",
          "Q = linear(X_q, W_q), K and V = linear(X_kv, W_k / W_v); split each with split_heads; for every b and "
          "h: Attention a = head ? head(q, k, v, b) : attention(q, k, v) on Matrix copies of the views; store "
          "a.weights in weights.view(b, h) and a.output in a (batch, n_heads, seq_q, d_k) Tensor4; finally "
          "output = linear(combine_heads(outputs), W_o). Refuse d_model % n_heads != 0 with invalid_argument");
}

}  // namespace sa
