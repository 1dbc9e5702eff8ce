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
          "scores by dot products with the query's row (its own included), weights by softmax, then the "
          "weighted sum of the rows; refuse a query_index outside the tokens "
          "(more: ./book hint 1 context_vector)");
}

SimpleAttention simple_attention(const Matrix& X) {
  // TODO: the same for all queries at once: the score matrix, a softmax along
  // each of its rows, then the weights times X.
  SA_TODO("simple_attention",
          "every query's scores in one product, a softmax along each row, one more product to mix the rows; "
          "row i must equal your context_vector(X, i) (more: ./book hint 1 simple_attention)");
}

Matrix embed(const Matrix& table, const std::vector<int64_t>& ids) {
  // TODO: the embedding of each id: row ids[i] of the table becomes row i of the
  // result. Refuse an id that names no row (the header says with what).
  SA_TODO("embed",
          "one row of the table per id, in order; an id outside the table is refused "
          "(more: ./book hint 1 embed)");
}

Matrix positional_encoding(int64_t seq_len, int64_t d_model) {
  // TODO: a (seq_len, d_model) table of sines and cosines: each pair of columns
  // shares one frequency, and the angle grows with the position (the header
  // has the formula).
  SA_TODO("positional_encoding",
          "even columns hold sines, odd columns cosines of pos / 10000^(2i / d_model) "
          "(more: ./book hint 1 positional_encoding)");
}

Matrix linear(const Matrix& X, const Linear& layer) {
  // TODO: X times the layer's weights, plus its bias on every row when it has one.
  SA_TODO("linear",
          "a matrix product, then the bias broadcast over the rows; refuse widths that do not fit "
          "(more: ./book hint 1 linear)");
}

QKV project_qkv(const Matrix& X, const Linear& W_q, const Linear& W_k, const Linear& W_v) {
  // TODO: Q, K and V: three projections of the same X, each with your linear().
  SA_TODO("project_qkv", "your linear(), once per projection (more: ./book hint 1 project_qkv)");
}

}  // namespace sa
