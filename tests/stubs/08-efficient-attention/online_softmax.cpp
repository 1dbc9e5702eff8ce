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
          "when the maximum grows, the sum so far must be rescaled to the new maximum "
          "(more: ./book hint 8 online_softmax_update)");
}

Matrix online_softmax_rows(const Matrix& scores) {
  // TODO: softmax of every row from one online pass (max and sum) and one pass
  // to write the weights.
  SA_TODO("online_softmax_rows",
          "your online_softmax_update over the row, then the weights from its max and sum "
          "(more: ./book hint 8 online_softmax_rows)");
}

}  // namespace sa
