// Chapter 7 exercise: the attention-pattern analyzer. What each number means
// is in chapters/07-training/patterns.hpp; then run `./book check`.
#include "07-training/patterns.hpp"

#include "03-softmax/softmax.hpp"
#include "sa/exercise.hpp"

#include <algorithm>
#include <stdexcept>

namespace sa {

PatternStats attention_pattern(const Matrix& weights, int64_t window) {
  // TODO: refuse an empty matrix and a negative window; entropy is the mean
  // of chapter 3's row_entropy, focus is chapter 3's focus; diagonal is the
  // mean of weights(i, i) over the shorter side; local is the mean over rows
  // of the weight within |j - i| <= window (clip the band at the edges).
  SA_TODO("attention_pattern",
          "entropy = mean(row_entropy(P)), focus = focus(P), diagonal = mean_i P(i, i), "
          "local = mean_i of sum of P(i, j) for max(0, i - w) <= j <= min(cols - 1, i + w)");
}

}  // namespace sa
