// Chapter 8: the cost of attention, and how to beat it.
//
// The functions this chapter teaches. solutions/08-efficient-attention/
// holds the reference; exercises/08-efficient-attention/ is yours to write.
//
// Chapter 3's attention builds the whole (seq_q, seq_k) matrix of scores and
// then of weights: memory and time grow with seq_len². The functions here
// compute the same output without ever holding that matrix:
//   - online softmax: one pass over a row, a running maximum and sum;
//   - tiled attention (FlashAttention's schedule): blocks of queries against
//     blocks of keys, one running maximum and sum per query row;
//   - its backward, which recomputes each block's weights from the row's
//     log-sum-exp instead of storing them;
//   - a key/value cache for generation, so a new token costs one row of
//     attention, not a whole new matrix;
//   - two cheaper attentions, each different from the full one rather than an
//     approximation of it: local (sliding-window) attention and
//     linear attention.
#pragma once

#include "sa/tensor.hpp"

#include <cstdint>
#include <limits>

namespace sa {

using ColVector = Eigen::Matrix<float, Eigen::Dynamic, 1>;

// ---------------------------------------------------------------------------
// Online softmax

// What one pass over a row keeps: the largest score seen so far, and the sum
// of exp(score - max) over the scores seen so far. Before any score: max =
// -inf, sum = 0.
struct OnlineSoftmax {
  float max = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
};

// Takes one more score x into the state. When x is a new maximum m', the sum
// so far was taken relative to the old maximum m and is rescaled by
// exp(m - m') before exp(x - m') is added; otherwise exp(x - m) is added.
//  - x = -inf (a masked key) leaves the state unchanged.
//  - NaN or +inf is refused with std::invalid_argument, as softmax_rows does.
void online_softmax_update(OnlineSoftmax& state, float x);

// Softmax of every row with online_softmax_update: one pass for the maximum
// and the sum, one pass to write exp(x - max) / sum. Equal to chapter 3's
// softmax_rows, including its edges: -inf gets 0, a row of only -inf gets
// all zeros, NaN or +inf is refused.
Matrix online_softmax_rows(const Matrix& scores);

// ---------------------------------------------------------------------------
// Tiled attention (FlashAttention's forward)

struct TiledAttention {
  Matrix output;  // (seq_q, d_v), equal to attention(Q, K, V).output
  // (seq_q) the log-sum-exp of each row's scaled scores, max + log(sum): the
  // backward rebuilds any weight from it as exp(score - lse). -inf for a
  // row that sees no key (its output row is 0, as softmax_rows gives).
  ColVector lse;
};

// softmax(Q Kᵀ / sqrt(d_k)) V computed block by block: `block` query rows
// against `block` key rows at a time, each query row keeping its running
// maximum, sum and unnormalised output, rescaled whenever the maximum
// grows. Extra memory is O(block²) for one block of scores, never
// (seq_q, seq_k). seq_q or seq_k need not be multiples of `block`: the last
// block is smaller.
//  - causal: query i sees keys 0..i (chapter 5's mask). Blocks entirely
//    above the diagonal are skipped without computing them; blocks the
//    diagonal crosses are masked element by element. Needs seq_q == seq_k.
//  - Refused with std::invalid_argument: Q and K of different d_k, K and V
//    of different seq_k, block < 1, causal with seq_q != seq_k, d_k = 0,
//    an inf or NaN anywhere in Q, K or V, and (found at the end, since it
//    shows only in the products) scores too large for float.
TiledAttention tiled_attention(const Matrix& Q, const Matrix& K, const Matrix& V, bool causal = false,
                               int64_t block = 128);

struct AttentionGrads {
  Matrix dQ, dK, dV;  // shapes of Q, K, V
};

// The backward of tiled_attention, block by block like its forward and
// without the (seq_q, seq_k) matrix: with D = rowsum(dO ∘ O), each block's
// weights P = exp(S - lse) are recomputed from its scores S, then
//   dV += Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP - D),
//   dQ += dS K / sqrt(d_k),  dK += dSᵀ Q / sqrt(d_k).
// (dS is chapter 3's softmax_backward: rowsum(P ∘ dP) = rowsum(dO ∘ O).)
// O and lse are what tiled_attention returned for the same Q, K, V,
// causal. Refused with std::invalid_argument: what tiled_attention refuses
// (Q and K of different d_k, K and V of different seq_k, block < 1, causal
// with seq_q != seq_k, ...), dO not (seq_q, d_v), and fwd.output not
// (seq_q, d_v) or fwd.lse not seq_q long.
AttentionGrads tiled_attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V, const TiledAttention& fwd,
                                        const Matrix& dO, bool causal = false, int64_t block = 128);

// ---------------------------------------------------------------------------
// Generation with a key/value cache

// The keys and values of the tokens generated so far, one row per token.
// Rows 0..size-1 of K and V hold them; the matrices have room for
// `capacity` rows, allocated once, so appending never copies.
struct KVCache {
  Matrix K, V;       // (capacity, d_k), (capacity, d_v)
  int64_t size = 0;  // rows in use

  KVCache(int64_t capacity, int64_t d_k, int64_t d_v) : K(capacity, d_k), V(capacity, d_v) {}
  int64_t capacity() const { return K.rows(); }
};

// Stores one token's key k (1, d_k) and value v (1, d_v) in row `size` and
// grows size by one. A full cache, or k or v of the wrong width, is refused
// with std::invalid_argument.
void kv_append(KVCache& cache, const RowVector& k, const RowVector& v);

// The new token's attention over every token in the cache (itself included
// when it was appended first): softmax(q K[0:size]ᵀ / sqrt(d_k)) V[0:size],
// shape (1, d_v). This is the last row of causal attention over the same
// tokens: a query never needs the keys after it. An empty cache, a cache
// of d_k 0, or q of the wrong width, is refused with std::invalid_argument.
RowVector kv_attend(const KVCache& cache, const RowVector& q);

// ---------------------------------------------------------------------------
// Cheaper attentions: each a different attention from the full one (local
// attention sees fewer keys, linear attention weighs them differently), not
// an approximation of it

// Causal sliding-window mask (seq_len, seq_len): query i sees keys
// i-window+1 .. i, at most `window` of them. window >= seq_len is the causal
// mask. window < 1 or seq_len < 1 is refused with std::invalid_argument.
Mask sliding_window_mask(int64_t seq_len, int64_t window);

// Causal local attention: each query attends over its last `window` keys
// only, computed on that band alone, O(seq_len · window · d) time and
// memory. Equal to chapter 5's masked_attention with sliding_window_mask.
// Refused with std::invalid_argument: window < 1, Q, K, V with different
// numbers of rows, Q and K of different d_k, d_k = 0.
Matrix local_attention(const Matrix& Q, const Matrix& K, const Matrix& V, int64_t window);

// Causal linear attention with the feature map φ(x) = elu(x) + 1 (positive,
// so every weight is positive): output row i is
//   φ(q_i) S_i / (φ(q_i) · z_i),  S_i = Σ_{j ≤ i} φ(k_j)ᵀ v_j,  z_i = Σ_{j ≤ i} φ(k_j),
// kept as running sums: O(seq_len · d_k · d_v), no seq_len² anywhere. It
// replaces exp(q·k / sqrt(d_k)) by φ(q)·φ(k): a different attention, not an
// approximation that converges to the softmax one. Refused with
// std::invalid_argument: Q, K, V with different numbers of rows, Q and K of
// different d_k, d_k = 0.
Matrix linear_attention(const Matrix& Q, const Matrix& K, const Matrix& V);

}  // namespace sa
