// Chapter 2: why attention divides the scores by sqrt(d_k).
//
// The functions this chapter teaches. solutions/02-scaling/scaling.cpp holds
// the reference; exercises/02-scaling/scaling.cpp is yours to write.
#pragma once

#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <cstdint>

namespace sa {

// Q Kᵀ / sqrt(d_k) for queries (seq_q, d_k) and keys (seq_k, d_k): the
// (seq_q, seq_k) matrix of scaled scores. seq_q and seq_k may differ
// (cross-attention); a different d_k, or d_k = 0, is refused with
// std::invalid_argument.
Matrix scaled_scores(const Matrix& Q, const Matrix& K);

// Empirical statistics of dot products q·k of independent N(0, 1) vectors.
struct DotStats {
  double mean = 0, variance = 0;                // of q·k: theory 0 and d_k
  double scaled_mean = 0, scaled_variance = 0;  // of q·k / sqrt(d_k): theory 0 and 1
};

// Draws q = randn(samples, d_k) then k = randn(samples, d_k) from `gen` (the
// same two calls as PyTorch), takes the `samples` row-wise dot products, and
// returns their mean and unbiased variance (divide by samples - 1, like
// torch.var), raw and scaled. d_k >= 1 and samples >= 2, else
// std::invalid_argument.
DotStats dot_product_stats(Generator& gen, int64_t d_k, int64_t samples);

}  // namespace sa
