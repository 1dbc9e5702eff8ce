// Masks written out from their definitions, for the suites of chapters 5
// and 8: a test of masked or causal attention builds its expected mask
// here, not with the reader's causal_mask or padding_masks, so that each
// test case points at one function.
#pragma once

#include "sa/tensor.hpp"

#include <cstdint>

namespace sa::test {

// The (rows, cols) mask whose entry (i, j) is allowed(i, j).
template <typename Allowed>
Mask mask_where(int64_t rows, int64_t cols, Allowed allowed) {
  Mask m(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m(i, j) = allowed(i, j);
  return m;
}

// Query i may see keys 0..i.
inline Mask causal(int64_t n) {
  return mask_where(n, n, [](int64_t i, int64_t j) { return j <= i; });
}

// Every query may see keys 0..length-1 (padding after them).
inline Mask keys_below(int64_t length, int64_t n) {
  return mask_where(n, n, [=](int64_t, int64_t j) { return j < length; });
}

}  // namespace sa::test
