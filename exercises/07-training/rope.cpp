// Chapter 7 exercise: rotary position embeddings (RoPE). Write both
// functions, then run `./book check 7`. What each must do, the formula and
// the refusals are in chapters/07-training/rope.hpp.
#include "07-training/rope.hpp"

#include "07-training/training.hpp"
#include "sa/exercise.hpp"

#include <cmath>
#include <stdexcept>

namespace sa {

void rope_forward(Matrix& QKV, int64_t batch, int64_t n_heads, double base) {
  // TODO: attention_dims (training.hpp) gives seq, d_model and d_k; refuse an
  // odd d_k and a base that is not above 1; then rotate every pair of
  // features of Q and K by an angle that grows with the position (the
  // header has the formula). V is left alone.
  SA_TODO("rope_forward",
          "a 2-D rotation of each feature pair of Q and K, its angle set by position and pair "
          "(more: ./book hint 7 rope_forward)");
}

void rope_backward(Matrix& dQKV, int64_t batch, int64_t n_heads, double base) {
  // TODO: the same refusals; the transpose of a rotation is the rotation by the
  // opposite angle.
  SA_TODO("rope_backward",
          "rope_forward's rotation with the angle negated, on dQ and dK "
          "(more: ./book hint 7 rope_backward)");
}

}  // namespace sa
