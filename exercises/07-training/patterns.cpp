// Chapter 7 exercise: the attention-pattern analyzer. What each number means
// is in chapters/07-training/patterns.hpp; then run `./book check`.
#include "07-training/patterns.hpp"

#include "03-softmax/softmax.hpp"
#include "sa/exercise.hpp"

#include <algorithm>
#include <stdexcept>

namespace sa {

PatternStats attention_pattern(const Matrix& weights, int64_t window) {
  // TODO: refuse an empty matrix and a negative window; the four numbers of
  // patterns.hpp: entropy and focus reuse chapter 3's row_entropy and focus,
  // diagonal and local are new.
  SA_TODO("attention_pattern",
          "two numbers come from chapter 3, two are sums over the diagonal and a band around it "
          "(more: ./book hint 7 attention_pattern)");
}

}  // namespace sa
