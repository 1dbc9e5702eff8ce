// Chapter 1: from words to queries, keys and values.
//
// The functions this chapter teaches. solutions/01-qkv-projection/qkv.cpp
// holds the reference; exercises/01-qkv-projection/qkv.cpp is yours to write.
#pragma once

#include "sa/nn.hpp"
#include "sa/tensor.hpp"

#include <cstdint>
#include <vector>

namespace sa {

// Row ids[i] of `table` becomes row i of the result: (vocab, d_model) and
// seq_len ids give (seq_len, d_model). An id outside [0, vocab) is refused
// with std::out_of_range.
Matrix embed(const Matrix& table, const std::vector<int64_t>& ids);

// The sinusoidal positional encoding of "Attention Is All You Need":
//   PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
//   PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))
// (seq_len, d_model); an odd d_model ends with a sine column. seq_len < 0 or
// d_model < 1 is refused with std::invalid_argument.
// Precision: float or double arithmetic both pass. The tests allow 2e-5 per
// entry: a float32 angle pos / 10000^(2i/d_model) of up to 50 rad carries
// about 4e-6 of rounding, and a wrong formula is off by order 1.
Matrix positional_encoding(int64_t seq_len, int64_t d_model);

// X W + b for a token-per-row X: (seq_len, d_in) -> (seq_len, d_out).
// Mismatched sizes are refused with std::invalid_argument.
Matrix linear(const Matrix& X, const Linear& layer);

struct QKV {
  Matrix Q, K, V;
};

// The three projections of self-attention: Q = X W_q + b_q, and so on.
QKV project_qkv(const Matrix& X, const Linear& W_q, const Linear& W_k, const Linear& W_v);

}  // namespace sa
