// Reference solutions of chapter 5.
#include "05-causal-mask/mask.hpp"

#include <fmt/core.h>

#include <limits>
#include <stdexcept>

#include "02-scaling/scaling.hpp"

namespace sa {

Mask causal_mask(int64_t seq_len) {
  if (seq_len < 0) throw std::invalid_argument(fmt::format("causal_mask: seq_len must be >= 0, got {}", seq_len));
  // Query i may look at keys 0..i: itself and everything before it. The
  // diagonal stays allowed, so no row is ever empty (row 0 sees key 0).
  Mask mask(seq_len, seq_len);
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = 0; j < seq_len; ++j) mask(i, j) = j <= i;
  return mask;
}

Matrix apply_mask(const Matrix& scores, const Mask& mask) {
  if (scores.rows() != mask.rows() || scores.cols() != mask.cols())
    throw std::invalid_argument(fmt::format("apply_mask: scores are ({}, {}) but the mask is ({}, {})", scores.rows(),
                                            scores.cols(), mask.rows(), mask.cols()));
  // -inf, not a large negative number: exp(-inf) is exactly 0, so a
  // forbidden key gets weight exactly 0 whatever the other scores are, and
  // the softmax over the allowed keys still sums to 1. PyTorch:
  // scores.masked_fill(mask == 0, float('-inf')).
  const float minus_inf = -std::numeric_limits<float>::infinity();
  Matrix masked = scores;
  for (int64_t i = 0; i < scores.rows(); ++i)
    for (int64_t j = 0; j < scores.cols(); ++j)
      if (!mask(i, j)) masked(i, j) = minus_inf;
  return masked;
}

std::vector<Mask> padding_masks(const std::vector<int64_t>& lengths, int64_t seq_len) {
  if (seq_len < 0) throw std::invalid_argument(fmt::format("padding_masks: seq_len must be >= 0, got {}", seq_len));
  std::vector<Mask> masks;
  masks.reserve(lengths.size());
  for (size_t b = 0; b < lengths.size(); ++b) {
    const int64_t length = lengths[b];
    if (length < 0 || length > seq_len)
      throw std::invalid_argument(fmt::format(
          "padding_masks: sequence {} has length {}, outside [0, {}] (the padded length)", b, length, seq_len));
    // Positions length..seq_len-1 of sequence b are padding: no query may
    // take anything from them. Every row is the same: the mask is about
    // keys. (The padded queries still produce outputs; whatever reads them
    // later, a loss for instance, has to ignore those rows.)
    Mask mask(seq_len, seq_len);
    for (int64_t i = 0; i < seq_len; ++i)
      for (int64_t j = 0; j < seq_len; ++j) mask(i, j) = j < length;
    masks.push_back(std::move(mask));
  }
  return masks;
}

Mask mask_and(const Mask& a, const Mask& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw std::invalid_argument(fmt::format("mask_and: masks of shape ({}, {}) and ({}, {}) cannot be combined",
                                            a.rows(), a.cols(), b.rows(), b.cols()));
  // A key is visible only if every rule allows it.
  return (a.array() && b.array()).matrix();
}

Attention masked_attention(const Matrix& Q, const Matrix& K, const Matrix& V, const Mask& mask) {
  if (V.rows() != K.rows())
    throw std::invalid_argument(fmt::format(
        "masked_attention: K has {} rows (keys) but V has {}; every key needs its value", K.rows(), V.rows()));
  // The mask goes on the scores, before softmax: masking the weights after
  // softmax would leave rows that no longer sum to 1. A query whose whole row
  // is masked gets -inf everywhere; chapter 3's softmax_rows turns that row
  // into zeros (PyTorch 1.13 would give NaN), so its output row is 0 · V = 0.
  Attention result;
  result.weights = softmax_rows(apply_mask(scaled_scores(Q, K), mask));
  result.output = result.weights * V;
  return result;
}

}  // namespace sa
