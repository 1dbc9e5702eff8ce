// Chapter 6: dropout on attention weights.
//
// The functions this chapter teaches. solutions/06-dropout/dropout.cpp holds
// the reference; exercises/06-dropout/dropout.cpp is yours.
#pragma once

#include "sa/rng.hpp"
#include "sa/tensor.hpp"

namespace sa {

struct DropoutResult {
  Matrix output;  // x with dropped entries zeroed and survivors scaled by 1/(1-p)
  Mask keep;      // true where the entry survived
};

// Inverted dropout in training: every entry is dropped independently with
// probability p, survivors are multiplied by 1/(1-p) so the expectation is
// unchanged. p = 0 keeps everything (the identity); p = 1 drops everything
// and returns zeros without dividing by zero. p outside [0, 1] is refused
// with std::invalid_argument. Draws come from `gen`.
DropoutResult dropout(const Matrix& x, double p, Generator& gen);

// Backward: the gradient flows only through the kept entries, with the same
// 1/(1-p) scale: d_x = d_out ∘ keep / (1-p) (zeros when p = 1). p outside
// [0, 1], or a mask of another shape than d_out, is refused with
// std::invalid_argument.
Matrix dropout_backward(const Matrix& d_out, const Mask& keep, double p);

}  // namespace sa
