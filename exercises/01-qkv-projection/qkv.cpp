// Chapter 1 exercises: write each function, then run `./book check`.
// The declarations and what each must do are in chapters/01-qkv-projection/qkv.hpp.
// Delete the SA_TODO line of a function once you have written it.
#include "01-qkv-projection/qkv.hpp"

#include "sa/exercise.hpp"

#include <cmath>
#include <stdexcept>

namespace sa {

RowVector context_vector(const Matrix& X, int64_t query_index) {
  // TODO: score every token j against the query (a dot product of two rows of X),
  // turn the scores into weights with softmax, and mix the rows of X with them.
  SA_TODO("context_vector",
          "the score of token j is the dot product of the query's row with row j (the query's own row "
          "included); a weight is exp(its score) divided by the sum of all the exps; the context adds up "
          "the rows of X, each times its weight. A query_index outside [0, X.rows()) is std::out_of_range");
}

SimpleAttention simple_attention(const Matrix& X) {
  // TODO: the same for all queries at once: the score matrix, a softmax along
  // each of its rows, then the weights times X.
  SA_TODO("simple_attention",
          "one matrix product gives every query's scores, (seq_len, seq_len); the softmax runs along each "
          "row (row i belongs to query i, so it must sum to 1); one more product mixes the rows of X. Row i "
          "must equal your context_vector(X, i)");
}

Matrix embed(const Matrix& table, const std::vector<int64_t>& ids) {
  // TODO: copy row ids[i] of table into row i of a (ids.size(), table.cols()) matrix.
  SA_TODO("embed",
          "X.row(i) = table.row(ids[i]); throw std::out_of_range when an id is < 0 or >= table.rows()");
}

Matrix positional_encoding(int64_t seq_len, int64_t d_model) {
  // TODO: fill a (seq_len, d_model) matrix with sines (even columns) and cosines (odd columns).
  SA_TODO("positional_encoding",
          "columns j and j+1 (j even) share the angle pos / 10000^(j / d_model); compute it in double, "
          "then sin for even j and cos for odd j");
}

Matrix linear(const Matrix& X, const Linear& layer) {
  // TODO: return X * W, plus the bias b on every row when the layer has one.
  SA_TODO("linear",
          "Matrix Y = X * layer.W; if (layer.b) Y.rowwise() += *layer.b; refuse X.cols() != layer.d_in() "
          "with std::invalid_argument");
}

QKV project_qkv(const Matrix& X, const Linear& W_q, const Linear& W_k, const Linear& W_v) {
  // TODO: the three projections of the same X.
  SA_TODO("project_qkv", "three calls to your linear(): {linear(X, W_q), linear(X, W_k), linear(X, W_v)}");
}

}  // namespace sa
