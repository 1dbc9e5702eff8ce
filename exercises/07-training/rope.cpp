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
  // odd d_k and a base that is not above 1; then turn every pair of Q and K.
  SA_TODO("rope_forward",
          "for pair i: theta = base^(-2i/d_k); at position p = row % seq, c = cos(p theta), s = sin(p theta); "
          "in the Q and K columns of every head: (x0, x1) -> (x0 c - x1 s, x0 s + x1 c); V unchanged");
}

void rope_backward(Matrix& dQKV, int64_t batch, int64_t n_heads, double base) {
  // TODO: the same refusals; the transpose of a rotation is the rotation
  // by the opposite angle.
  SA_TODO("rope_backward",
          "as rope_forward with the angle -p theta: (g0, g1) -> (g0 c + g1 s, -g0 s + g1 c) in the dQ and dK "
          "columns; dV unchanged");
}

}  // namespace sa
