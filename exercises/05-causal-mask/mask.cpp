// Chapter 5 exercises: write each function, then run `./book check`.
// The declarations and what each must do are in chapters/05-causal-mask/mask.hpp.
// Delete the SA_TODO line of a function once you have written it.
#include "05-causal-mask/mask.hpp"

#include <limits>
#include <stdexcept>

#include "02-scaling/scaling.hpp"
#include "sa/exercise.hpp"

namespace sa {

Mask causal_mask(int64_t seq_len) {
  // TODO: a (seq_len, seq_len) mask that is true on and below the diagonal.
  SA_TODO("causal_mask", "Mask m(seq_len, seq_len); m(i, j) = (j <= i): query i sees itself and the keys before it");
}

Matrix apply_mask(const Matrix& scores, const Mask& mask) {
  // TODO: a copy of scores with -inf wherever the mask is false.
  SA_TODO("apply_mask",
          "refuse a mask whose shape differs from the scores' with std::invalid_argument; copy scores, then set "
          "entry (i, j) to -std::numeric_limits<float>::infinity() where !mask(i, j)");
}

std::vector<Mask> padding_masks(const std::vector<int64_t>& lengths, int64_t seq_len) {
  // TODO: one (seq_len, seq_len) mask per length: key j is allowed iff j < length.
  SA_TODO("padding_masks",
          "refuse a length < 0 or > seq_len with std::invalid_argument; for each length L, m(i, j) = (j < L) "
          "for every row i");
}

Mask mask_and(const Mask& a, const Mask& b) {
  // TODO: true where both masks are true.
  SA_TODO("mask_and", "element by element: result(i, j) = a(i, j) && b(i, j)  (or (a.array() && b.array()).matrix())");
}

Attention masked_attention(const Matrix& Q, const Matrix& K, const Matrix& V, const Mask& mask) {
  // TODO: chapter 3's attention, with the mask applied to the scaled scores before softmax.
  SA_TODO("masked_attention",
          "weights = softmax_rows(apply_mask(scaled_scores(Q, K), mask)); output = weights * V "
          "(softmax_rows already turns an all -inf row into zeros)");
}

}  // namespace sa
