// Chapter 8 exercises: online softmax. Write each function, then run
// `./book check 8`. The declarations and what each must do are in
// chapters/08-efficient-attention/efficient.hpp. Delete the SA_TODO line of
// a function once you have written it.
#include "08-efficient-attention/efficient.hpp"

#include "sa/exercise.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace sa {

void online_softmax_update(OnlineSoftmax& state, float x) {
  // TODO: take one more score into the running maximum and sum.
  SA_TODO("online_softmax_update",
          "refuse NaN and +inf with std::invalid_argument; x == -inf changes nothing; if x > state.max: sum = sum * "
          "exp(max - x) + 1 and max = x; else sum += exp(x - max)");
}

Matrix online_softmax_rows(const Matrix& scores) {
  // TODO: softmax of every row from one online pass (max and sum) and one pass to write the weights.
  SA_TODO("online_softmax_rows",
          "per row: OnlineSoftmax state; update it with every score; a row whose sum stays 0 (only -inf) is all "
          "zeros; else weight = exp(x - state.max) / state.sum");
}

}  // namespace sa
