// Finite differences: how the book checks a hand-written backward. One
// home for the chapter programs' spot checks and the hidden suites.
//
// The central difference (L(x + h) − L(x − h)) / 2h has error h² L'''/6
// (truncation) plus the rounding of L divided by 2h. In float32 with L of
// order 1 both are near 1e-5 relative for h = 1e-2, the step the book uses:
// far below the order-1 error of a wrong sign, factor or index.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace sa {

// dL/dx by a central difference in one number (float or double), x
// restored afterwards. The difference is divided by the step actually
// taken, (x + h) − (x − h) in x's type, which is not exactly 2h once |x| is
// large. `loss` returns double.
template <class T, class Loss>
double central_difference(T& x, T h, Loss&& loss) {
  const T old = x;
  x = old + h;
  const double plus = loss();
  x = old - h;
  const double minus = loss();
  x = old;
  return (plus - minus) / (double(old + h) - double(old - h));
}

// The derivative of L along u: (L(θ + h u) − L(θ − h u)) / 2h ≈ ⟨∇L, u⟩.
// One evaluation pair checks every entry of a gradient at once (the model
// tests use a random ±1 direction). θ is restored afterwards.
template <class Loss>
double directional_difference(std::span<float> theta, std::span<const float> u, float h, Loss&& loss) {
  const std::vector<float> saved(theta.begin(), theta.end());
  for (std::size_t i = 0; i < theta.size(); ++i) theta[i] = saved[i] + h * u[i];
  const double plus = loss();
  for (std::size_t i = 0; i < theta.size(); ++i) theta[i] = saved[i] - h * u[i];
  const double minus = loss();
  std::copy(saved.begin(), saved.end(), theta.begin());
  return (plus - minus) / (2.0 * double(h));
}

}  // namespace sa
