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
  // TODO: a (seq_len, seq_len) mask that lets each query see itself and the keys
  // before it, never the ones after.
  SA_TODO("causal_mask", "true on and below the diagonal (more: ./book hint 5 causal_mask)");
}

Matrix apply_mask(const Matrix& scores, const Mask& mask) {
  // TODO: a copy of the scores where every forbidden entry becomes -inf, so that
  // softmax gives it weight 0. Refuse a mask of another shape.
  SA_TODO("apply_mask", "copy, then overwrite the entries the mask forbids (more: ./book hint 5 apply_mask)");
}

std::vector<Mask> padding_masks(const std::vector<int64_t>& lengths, int64_t seq_len) {
  // TODO: one mask per sequence of the batch: no query may attend to a padding
  // key, that is a key at or after the sequence's length.
  SA_TODO("padding_masks",
          "a key is allowed when its index is below the sequence's length; refuse impossible lengths "
          "(more: ./book hint 5 padding_masks)");
}

Mask mask_and(const Mask& a, const Mask& b) {
  // TODO: a pair is allowed only where both masks allow it.
  SA_TODO("mask_and", "element by element, both conditions (more: ./book hint 5 mask_and)");
}

Attention masked_attention(const Matrix& Q, const Matrix& K, const Matrix& V, const Mask& mask) {
  // TODO: chapter 3's attention, with your apply_mask between the scaled scores
  // and softmax.
  SA_TODO("masked_attention",
          "chapter 3's attention with one more step before softmax "
          "(more: ./book hint 5 masked_attention)");
}

}  // namespace sa
