// Chapter 6 exercises: write each function, then run `./book check`.
// The declarations and what each must do are in chapters/06-dropout/dropout.hpp.
// Delete the SA_TODO line of a function once you have written it.
//
// The tests compare your mask with the one PyTorch draws for the same seed,
// bit for bit, so draw exactly as F.dropout does on the CPU:
//   - p == 0: return x and an all-true mask; p == 1: zeros and an all-false
//     mask. Neither end draws any random number (PyTorch does not either).
//   - otherwise, for every element in row-major order (i over rows, then j
//     over columns), ONE uniform double in [0, 1) (53 random bits of one
//     gen.random64(), as PyTorch's bernoulli_ draws):
//         u    = gen.uniform_double();
//         keep = u < 1.0 - p;  // compared in double
//   - survivors are multiplied by scale = 1.0f / float(1.0 - p) (a float
//     division, as PyTorch rounds it); dropped elements are 0.
#include "06-dropout/dropout.hpp"

#include "sa/exercise.hpp"

#include <stdexcept>

namespace sa {

DropoutResult dropout(const Matrix& x, double p, Generator& gen) {
  // TODO: drop each element with probability p and scale the survivors so the
  // expected value is unchanged; return the output and the keep mask. Draw
  // exactly as the comment at the top of this file says.
  SA_TODO("dropout",
          "one uniform draw per element, in row-major order; p = 0 and p = 1 draw nothing "
          "(more: ./book hint 6 dropout)");
}

Matrix dropout_backward(const Matrix& d_out, const Mask& keep, double p) {
  // TODO: the gradient goes through where the forward kept the element, scaled
  // as the forward scaled it.
  SA_TODO("dropout_backward", "the forward's mask and scale applied to d_out (more: ./book hint 6 dropout_backward)");
}

}  // namespace sa
