// Chapter 4: several attention heads side by side.
//
// The functions this chapter teaches. solutions/04-multi-head/multihead.cpp
// holds the reference; exercises/04-multi-head/multihead.cpp is yours.
//
// A batch of sequences (batch, seq, d_model) is stored as a Matrix of
// batch * seq rows: sequence b occupies rows [b * seq, (b + 1) * seq). That
// is exactly PyTorch's contiguous layout, so one product X W_q projects the
// whole batch.
#pragma once

#include "03-softmax/softmax.hpp"
#include "sa/nn.hpp"
#include "sa/tensor.hpp"

#include <functional>

namespace sa {

// (batch * seq, n_heads * d_k) -> (batch, n_heads, seq, d_k): column block
// h of sequence b becomes head h. PyTorch: x.view(batch, seq, n_heads, d_k)
// .transpose(1, 2). Refused with std::invalid_argument: batch or n_heads
// below 1, rows not divisible by batch, columns not divisible by n_heads.
Tensor4 split_heads(const Matrix& X, int64_t batch, int64_t n_heads);

// The inverse: (batch, n_heads, seq, d_k) -> (batch * seq, n_heads * d_k).
// combine_heads(split_heads(X, b, h)) == X exactly.
Matrix combine_heads(const Tensor4& heads);

// Attention inside one head of one sequence: given that head's Q, K, V and
// the sequence index b, return its output and weights. Chapter 5 passes a
// masked version, chapter 6 one with dropout.
using HeadAttention = std::function<Attention(const Matrix& Q, const Matrix& K, const Matrix& V, int64_t b)>;

struct MultiHead {
  Matrix output;   // (batch * seq_q, d_model), after W_o
  Tensor4 weights; // (batch, n_heads, seq_q, seq_k)
};

// Multi-head attention: Q = X_q W_q, K = X_kv W_k, V = X_kv W_v, split into
// n_heads heads of d_k = d_model / n_heads, attention per (sequence, head),
// heads combined, then W_o. X_q and X_kv are the same matrix for
// self-attention; for cross-attention they hold batch sequences of
// different lengths. `head` defaults to chapter 3's attention().
// Refused with std::invalid_argument: batch or n_heads < 1, d_model not
// divisible by n_heads, X_q or X_kv whose rows do not split into `batch`
// sequences, and a `head` that returns weights other than (seq_q, seq_k) or
// an output other than (seq_q, d_k).
MultiHead multi_head_attention(const Matrix& X_q, const Matrix& X_kv, int64_t batch, const AttentionParams& params,
                               int64_t n_heads, const HeadAttention& head = nullptr);

}  // namespace sa
