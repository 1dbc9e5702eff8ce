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

// Attention before any learned weight: each token's own vector X[i] is its
// query, its key and its value. For the query token i:
//   scores[j]  = X[i] . X[j]                      one dot product per token j
//   weights[j] = exp(scores[j]) / sum_k exp(scores[k])   (softmax: they sum to 1)
//   context    = sum_j weights[j] X[j]            a weighted mix of every row
// Returns the context vector of token `query_index`, (1, d_model). Plain loops
// are the point here. A query_index outside [0, seq_len) is refused with
// std::out_of_range. The tests keep every |score| below 30, so exp needs no
// care yet (chapter 3 makes softmax safe for any size).
RowVector context_vector(const Matrix& X, int64_t query_index);

// The same for every query at once, as matrices:
//   weights = softmax of each row of X Xᵀ     (seq_len, seq_len); row i is query i
//   context = weights X                       (seq_len, d_model); row i is context_vector(X, i)
struct SimpleAttention {
  Matrix weights, context;
};
SimpleAttention simple_attention(const Matrix& X);

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
// Refused with std::invalid_argument: X's columns not W's rows (d_in), and a
// bias whose length is not W's columns (d_out).
Matrix linear(const Matrix& X, const Linear& layer);

struct QKV {
  Matrix Q, K, V;
};

// The three projections of self-attention: Q = X W_q + b_q, and so on.
QKV project_qkv(const Matrix& X, const Linear& W_q, const Linear& W_k, const Linear& W_v);

}  // namespace sa
