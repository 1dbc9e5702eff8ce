// Reference solutions of chapter 4.
#include "04-multi-head/multihead.hpp"

#include "01-qkv-projection/qkv.hpp"

#include <fmt/core.h>

#include <stdexcept>

namespace sa {

Tensor4 split_heads(const Matrix& X, int64_t batch, int64_t n_heads) {
  if (batch < 1 || n_heads < 1)
    throw std::invalid_argument(
        fmt::format("split_heads: batch and n_heads must be at least 1, got batch {} and n_heads {}", batch, n_heads));
  if (X.rows() % batch != 0)
    throw std::invalid_argument(fmt::format("split_heads: X is {}: {} rows do not divide into {} sequences of equal "
                                            "length",
                                            shape_str(X), X.rows(), batch));
  if (X.cols() % n_heads != 0)
    throw std::invalid_argument(fmt::format(
        "split_heads: X is {}: d_model {} is not divisible by n_heads {}", shape_str(X), X.cols(), n_heads));

  const int64_t seq = X.rows() / batch, d_k = X.cols() / n_heads;
  Tensor4 heads(batch, n_heads, seq, d_k);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < n_heads; ++h)
      // Head h of sequence b is nothing but a rectangle of X: the seq rows of
      // that sequence and the d_k columns starting at h * d_k. Eigen's block
      // is already a strided view of X (PyTorch's view + transpose); copying
      // it head by head makes each head one contiguous (seq, d_k) block, so
      // that view(b, h) needs no stride and every later product reads
      // contiguous memory. The numbers are copied, never computed.
      heads.view(b, h) = X.block(b * seq, h * d_k, seq, d_k);
  return heads;
}

Matrix combine_heads(const Tensor4& heads) {
  // The exact inverse of split_heads: head h goes back to columns
  // [h * d_k, (h + 1) * d_k) of its sequence's rows. This is the "concat"
  // of Concat(head_1, ..., head_h): each token's row becomes its n_heads
  // head vectors side by side.
  const int64_t seq = heads.seq(), d_k = heads.dim();
  Matrix X(heads.batch() * seq, heads.heads() * d_k);
  for (int64_t b = 0; b < heads.batch(); ++b)
    for (int64_t h = 0; h < heads.heads(); ++h) X.block(b * seq, h * d_k, seq, d_k) = heads.view(b, h);
  return X;
}

MultiHead multi_head_attention(const Matrix& X_q, const Matrix& X_kv, int64_t batch, const AttentionParams& params,
                               int64_t n_heads, const HeadAttention& head) {
  if (batch < 1 || n_heads < 1)
    throw std::invalid_argument(fmt::format(
        "multi_head_attention: batch and n_heads must be at least 1, got batch {} and n_heads {}", batch, n_heads));
  const int64_t d_model = params.W_q.d_out();
  if (d_model % n_heads != 0)
    throw std::invalid_argument(
        fmt::format("multi_head_attention: d_model {} is not divisible by n_heads {}", d_model, n_heads));
  if (X_q.rows() % batch != 0 || X_kv.rows() % batch != 0)
    throw std::invalid_argument(fmt::format(
        "multi_head_attention: X_q is {} and X_kv is {}: both must hold {} sequences of equal length", shape_str(X_q),
        shape_str(X_kv), batch));

  // One product per projection for the whole batch: the rows of every
  // sequence go through the same W. Queries come from X_q; keys and values
  // from X_kv, which is X_q itself in self-attention.
  const Matrix Q = linear(X_q, params.W_q);   // (batch * seq_q, d_model)
  const Matrix K = linear(X_kv, params.W_k);  // (batch * seq_k, d_model)
  const Matrix V = linear(X_kv, params.W_v);  // (batch * seq_k, d_model)

  // The reshape trick: the heads are not n_heads separate projections but
  // column blocks of the one big projection.
  const Tensor4 Q_h = split_heads(Q, batch, n_heads);  // (batch, n_heads, seq_q, d_k)
  const Tensor4 K_h = split_heads(K, batch, n_heads);  // (batch, n_heads, seq_k, d_k)
  const Tensor4 V_h = split_heads(V, batch, n_heads);  // (batch, n_heads, seq_k, d_v)
  const int64_t seq_q = Q_h.seq(), seq_k = K_h.seq(), d_v = V_h.dim();

  MultiHead result;
  result.weights = Tensor4(batch, n_heads, seq_q, seq_k);
  Tensor4 outputs(batch, n_heads, seq_q, d_v);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < n_heads; ++h) {
      // Every (sequence, head) pair is an independent chapter-3 attention:
      // no head sees another head's columns, no sequence another's rows.
      const Matrix q = Q_h.view(b, h), k = K_h.view(b, h), v = V_h.view(b, h);
      const Attention a = head ? head(q, k, v, b) : attention(q, k, v);
      if (a.weights.rows() != seq_q || a.weights.cols() != seq_k || a.output.rows() != seq_q ||
          a.output.cols() != d_v)
        throw std::invalid_argument(fmt::format(
            "multi_head_attention: the head attention of sequence {}, head {} returned weights {} and output {}; "
            "expected {} and {}",
            b, h, shape_str(a.weights), shape_str(a.output), shape_str(Shape{seq_q, seq_k}),
            shape_str(Shape{seq_q, d_v})));
      result.weights.view(b, h) = a.weights;
      outputs.view(b, h) = a.output;
    }
  }

  // Concat(head_1, ..., head_h) W_o: W_o mixes what the heads found, the
  // only place where one head's result meets another's.
  result.output = linear(combine_heads(outputs), params.W_o);  // (batch * seq_q, d_model)
  return result;
}

}  // namespace sa
