// Chapter 5: masks — no peeking at the future, no attending to padding.
//
// The functions this chapter teaches. solutions/05-causal-mask/mask.cpp
// holds the reference; exercises/05-causal-mask/mask.cpp is yours.
// A Mask (sa/tensor.hpp) is a (seq_q, seq_k) matrix of bool: true = query i
// may attend to key j.
#pragma once

#include "03-softmax/softmax.hpp"
#include "sa/tensor.hpp"

#include <vector>

namespace sa {

// The lower-triangular (seq_len, seq_len) mask: query i sees keys 0..i.
// A negative seq_len is refused with std::invalid_argument.
Mask causal_mask(int64_t seq_len);

// Scores with every forbidden entry replaced by -inf, so that softmax gives
// it weight exactly 0. Shapes must agree (std::invalid_argument).
Matrix apply_mask(const Matrix& scores, const Mask& mask);

// One (seq_len, seq_len) mask per sequence of a padded batch: key j is
// allowed iff j < lengths[b]. A length outside [0, seq_len] is refused with
// std::invalid_argument.
std::vector<Mask> padding_masks(const std::vector<int64_t>& lengths, int64_t seq_len);

// Element-wise AND (for example causal and padding together). Masks of
// different shapes are refused with std::invalid_argument.
Mask mask_and(const Mask& a, const Mask& b);

// Attention with a mask applied to the scaled scores before softmax. A
// query whose row is fully masked gets zero weights and a zero output (never
// NaN): see chapter 3's softmax_rows. Shapes that do not fit (Q and K of
// different d_k, K and V of different lengths, a mask that is not
// (seq_q, seq_k)) are refused with std::invalid_argument.
Attention masked_attention(const Matrix& Q, const Matrix& K, const Matrix& V, const Mask& mask);

}  // namespace sa
