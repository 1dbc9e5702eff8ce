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
  // TODO: drop every element with probability p, scale the survivors by 1/(1-p), return output and mask.
  SA_TODO("dropout",
          "refuse !(p >= 0 && p <= 1) with std::invalid_argument; p == 0 -> x, all true; p == 1 -> zeros, all "
          "false (no draws at either end); else per element in row-major order: u = gen.uniform_double(); keep = u "
          "< 1.0 - p; out = keep ? x * (1.0f / float(1.0 - p)) : 0");
}

Matrix dropout_backward(const Matrix& d_out, const Mask& keep, double p) {
  // TODO: the gradient passes where the forward kept the element, scaled by the same 1/(1-p).
  SA_TODO("dropout_backward",
          "refuse p outside [0, 1] and a mask of another shape with std::invalid_argument; p == 1 -> zeros; else "
          "d_x(i, j) = keep(i, j) ? d_out(i, j) * (1.0f / float(1.0 - p)) : 0");
}

}  // namespace sa
