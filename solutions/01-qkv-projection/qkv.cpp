// Reference solutions of chapter 1.
#include "01-qkv-projection/qkv.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace sa {

RowVector context_vector(const Matrix& X, int64_t query_index) {
  const int64_t seq_len = X.rows(), d_model = X.cols();
  if (query_index < 0 || query_index >= seq_len)
    throw std::out_of_range(fmt::format("context_vector: query_index {} is outside the {} tokens of X {}", query_index,
                                        seq_len, shape_str(X)));
  // How well each token's vector matches the query's: a dot product, large
  // when the two point the same way. The query's own row is one of the keys.
  std::vector<double> scores(size_t(seq_len), 0.0);
  for (int64_t j = 0; j < seq_len; ++j)
    for (int64_t d = 0; d < d_model; ++d) scores[size_t(j)] += double(X(query_index, d)) * double(X(j, d));
  // Softmax turns the scores into weights that are positive and sum to 1,
  // so the context below is an average of the rows, not a growing sum.
  double total = 0.0;
  for (double& s : scores) total += (s = std::exp(s));
  RowVector context = RowVector::Zero(d_model);
  for (int64_t j = 0; j < seq_len; ++j)
    for (int64_t d = 0; d < d_model; ++d) context(d) += float(scores[size_t(j)] / total * double(X(j, d)));
  return context;
}

SimpleAttention simple_attention(const Matrix& X) {
  // Every query against every key at once: entry [i, j] of X Xᵀ is
  // X[i] . X[j], the score context_vector computes one by one.
  const Matrix scores = X * X.transpose();
  // Softmax along each row: row i holds query i's weights over the keys,
  // which must sum to 1 (a column's entries belong to different queries).
  // The largest score of the row is subtracted first; the weights stay the
  // same, and exp can no longer overflow.
  Matrix weights = (scores.colwise() - scores.rowwise().maxCoeff()).array().exp().matrix();
  weights.array().colwise() /= weights.rowwise().sum().array();
  return {weights, weights * X};
}

Matrix embed(const Matrix& table, const std::vector<int64_t>& ids) {
  Matrix X(int64_t(ids.size()), table.cols());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= table.rows())
      throw std::out_of_range(
          fmt::format("embed: token id {} is outside the table's {} rows", ids[i], table.rows()));
    // An embedding is only a lookup: the same id always gives the same row.
    X.row(int64_t(i)) = table.row(ids[i]);
  }
  return X;
}

Matrix positional_encoding(int64_t seq_len, int64_t d_model) {
  if (seq_len < 0 || d_model < 1)
    throw std::invalid_argument(fmt::format("positional_encoding: need seq_len >= 0 and d_model >= 1, got {} and {}",
                                            seq_len, d_model));
  Matrix PE(seq_len, d_model);
  for (int64_t pos = 0; pos < seq_len; ++pos) {
    for (int64_t j = 0; j < d_model; ++j) {
      // Columns 2i and 2i+1 share one frequency; it falls geometrically from
      // 1 (column 0) to about 1/10000, so every position gets a distinct
      // pattern of fast and slow waves. Double precision, then one rounding.
      const int64_t two_i = j - j % 2;
      const double angle = double(pos) / std::pow(10000.0, double(two_i) / double(d_model));
      PE(pos, j) = float(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return PE;
}

Matrix linear(const Matrix& X, const Linear& layer) {
  if (X.cols() != layer.d_in())
    throw std::invalid_argument(fmt::format("linear: X has {} columns but W is ({}, {}) and expects {}", X.cols(),
                                            layer.W.rows(), layer.W.cols(), layer.d_in()));
  if (layer.b && layer.b->size() != layer.d_out())
    throw std::invalid_argument(
        fmt::format("linear: b has {} entries but W has {} outputs", layer.b->size(), layer.d_out()));
  Matrix Y = X * layer.W;
  // The same bias is added to every token: broadcasting over rows.
  if (layer.b) Y.rowwise() += *layer.b;
  return Y;
}

QKV project_qkv(const Matrix& X, const Linear& W_q, const Linear& W_k, const Linear& W_v) {
  // Three views of the same tokens: what each looks for (Q), what each
  // offers to be matched on (K), and what each hands over when chosen (V).
  return {linear(X, W_q), linear(X, W_k), linear(X, W_v)};
}

}  // namespace sa
