// Reference solutions of chapter 8: local and linear attention.
#include "08-efficient-attention/efficient.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sa {

Mask sliding_window_mask(int64_t seq_len, int64_t window) {
  if (seq_len < 1 || window < 1)
    throw std::invalid_argument(
        fmt::format("sliding_window_mask: seq_len {} and window {} must both be at least 1", seq_len, window));
  Mask mask(seq_len, seq_len);
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = 0; j < seq_len; ++j) mask(i, j) = j <= i && j > i - window;
  return mask;
}

Matrix local_attention(const Matrix& Q, const Matrix& K, const Matrix& V, int64_t window) {
  if (window < 1) throw std::invalid_argument(fmt::format("local_attention: window is {}; it must be at least 1", window));
  if (Q.rows() != K.rows() || K.rows() != V.rows() || Q.cols() != K.cols() || Q.cols() == 0)
    throw std::invalid_argument(fmt::format(
        "local_attention: Q {}, K {}, V {}: needs seq_q == seq_k == seq_v and the same d_k > 0 for Q and K",
        shape_str(Q), shape_str(K), shape_str(V)));
  const float scale = 1.0f / std::sqrt(float(Q.cols()));
  Matrix out(Q.rows(), V.cols());
  RowVector scores;
  for (int64_t i = 0; i < Q.rows(); ++i) {
    // The band: keys first .. i, at most `window` of them. Nothing outside it
    // is ever computed.
    const int64_t first = std::max<int64_t>(0, i - window + 1), n = i - first + 1;
    scores = (Q.row(i) * K.middleRows(first, n).transpose()) * scale;
    scores = (scores.array() - scores.maxCoeff()).exp();
    out.row(i) = (scores / scores.sum()) * V.middleRows(first, n);
  }
  return out;
}

Matrix linear_attention(const Matrix& Q, const Matrix& K, const Matrix& V) {
  if (Q.rows() != K.rows() || K.rows() != V.rows() || Q.cols() != K.cols() || Q.cols() == 0)
    throw std::invalid_argument(fmt::format(
        "linear_attention: Q {}, K {}, V {}: needs seq_q == seq_k == seq_v and the same d_k > 0 for Q and K",
        shape_str(Q), shape_str(K), shape_str(V)));
  // φ(x) = elu(x) + 1: x + 1 for x > 0, exp(x) otherwise. Always > 0, so
  // every weight φ(q)·φ(k) is positive, as a softmax weight is.
  auto phi = [](const auto& x) { return x.unaryExpr([](float v) { return v > 0.0f ? v + 1.0f : std::exp(v); }); };
  const Matrix phi_Q = phi(Q), phi_K = phi(K);
  // Running sums over the keys seen so far: S = Σ φ(k_j)ᵀ v_j (d_k, d_v)
  // and z = Σ φ(k_j) (d_k). A query reads them in O(d_k · d_v).
  Matrix S = Matrix::Zero(Q.cols(), V.cols());
  RowVector z = RowVector::Zero(Q.cols());
  Matrix out(Q.rows(), V.cols());
  for (int64_t i = 0; i < Q.rows(); ++i) {
    S.noalias() += phi_K.row(i).transpose() * V.row(i);
    z += phi_K.row(i);
    out.row(i) = (phi_Q.row(i) * S) / phi_Q.row(i).dot(z);
  }
  return out;
}

}  // namespace sa
