// Chapter 2 exercises: write each function, then run `./book check`.
// The declarations and what each must do are in chapters/02-scaling/scaling.hpp.
// Delete the SA_TODO line of a function once you have written it.
#include "02-scaling/scaling.hpp"

#include "sa/exercise.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace sa {

Matrix scaled_scores(const Matrix& Q, const Matrix& K) {
  // TODO: every query's dot product with every key, divided by the square root of
  // the key width (the chapter measures why).
  SA_TODO("scaled_scores",
          "one matrix product of Q with K transposed, then the division; refuse widths that differ "
          "(more: ./book hint 2 scaled_scores)");
}

DotStats dot_product_stats(Generator& gen, int64_t d_k, int64_t samples) {
  // TODO: draw the random queries and keys as PyTorch does (the header says in
  // which order), take one dot product per sample, and return the mean and
  // the unbiased variance of those dot products, raw and scaled.
  SA_TODO("dot_product_stats",
          "the statistics the chapter's step on scaling prints; refuse too few samples or d_k < 1 "
          "(more: ./book hint 2 dot_product_stats)");
}

}  // namespace sa
