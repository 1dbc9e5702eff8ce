// Comparisons that say what differs. Each REQUIREs inside, so a failing one
// stops the test case with a single line:
//   Q: largest error 3.1e-03 at [2, 5] (got 0.1234, expected 0.1265);
//   tolerance 1e-05 + 1e-04 * |expected|
//
// Tolerance policy (also in tests/README.md):
//   kBitExact   0 + 0        the generator, and anything copied, not computed
//   kElementwise 1e-6 + 1e-5 one float op per element (add, scale, exp)
//   kFloat32     1e-5 + 1e-4 float32 sums whose order differs from PyTorch's
//                            (matrix products, softmax, reductions)
// Values of order 1 and dot products of at most a few hundred terms keep
// float32 rounding well below kFloat32; a wrong index, sign or transpose
// moves values by order 1, far above it.
#pragma once

#include "sa/tensor.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sa::test {

struct Tolerance {
  double atol;
  double rtol;
};
inline constexpr Tolerance kBitExact{0.0, 0.0};
inline constexpr Tolerance kElementwise{1e-6, 1e-5};
inline constexpr Tolerance kFloat32{1e-5, 1e-4};

// Shapes first (a wrong shape says "shape (6, 4), expected (6, 8)"), then
// every element: |actual - expected| <= atol + rtol * |expected|. NaN equals
// only NaN and an infinity only the same infinity.
void require_close(std::string_view what, const Matrix& actual, const Matrix& expected, Tolerance tol);
// The same, with the worst entry [row, col] named by `where` in the words of
// the matrix's layout: a packed gradient reads "dK of sequence 2, head 1,
// row 0, column 0 (dQKV [8, 9])", not a bare index.
void require_close(std::string_view what, const Matrix& actual, const Matrix& expected, Tolerance tol,
                   const std::function<std::string(int64_t row, int64_t col)>& where);
void require_close(std::string_view what, const std::vector<float>& actual, const std::vector<float>& expected,
                   Tolerance tol);
void require_shape(std::string_view what, const Matrix& actual, int64_t rows, int64_t cols);
// One number, printed with 9 significant digits so that a float32 value that
// differs in its last digits does not read as equal to what was expected:
//   p[0]: got 0.999800026, expected 0.9997; tolerance 0 + 1e-06 * |expected|
// A CHECK: the test case goes on.
void check_close(std::string_view what, double actual, double expected, Tolerance tol);
void require_shape(std::string_view what, const Shape& actual, const Shape& expected);
// Two masks, entry by entry: "causal_mask(6): entry [2, 4] is allowed,
// expected forbidden".
void require_mask(std::string_view what, const Mask& actual, const Mask& expected);

}  // namespace sa::test
