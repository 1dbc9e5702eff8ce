// Chapter 1 exercises: write each function, then run `./book check`.
// The declarations and what each must do are in chapters/01-qkv-projection/qkv.hpp.
// Delete the SA_TODO line of a function once you have written it.
#include "01-qkv-projection/qkv.hpp"

#include "sa/exercise.hpp"

#include <cmath>
#include <stdexcept>

namespace sa {

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
