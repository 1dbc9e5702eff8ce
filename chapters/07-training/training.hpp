// Chapter 7: training a tiny transformer, every backward pass by hand.
//
// The layers of the model in the order the data flows through them. For
// each: the forward, what the forward keeps for the backward (its cache),
// and the backward right after it. Four backward passes are the chapter's
// exercises; they are only declared here:
//
//   layernorm_backward      cross_entropy_backward
//   attention_backward      adam_step
//
// solutions/07-training/training.cpp holds the reference and
// exercises/07-training/training.cpp is yours. Everything else is written
// out inline below, so both tracks share it.
//
// Conventions
//  - A batch of sequences (batch, seq, d) is a Matrix of batch * seq rows,
//    sequence b in rows [b * seq, (b + 1) * seq) (chapter 4's layout), so one
//    matrix product handles the whole batch.
//  - Every function writes into outputs the caller allocated with the right
//    shape: the model allocates them once, and a training step then reuses
//    them. A wrong shape is refused with std::invalid_argument.
//  - Outputs are overwritten, never accumulated. Where a gradient arrives by
//    two paths (the residual stream) the model adds the two itself.
//  - A layer's parameter gradients have the layer's own type: a Linear holds
//    dW and db, a LayerNorm d_gamma and d_beta.
//  - float32 throughout, like PyTorch's default.
#pragma once

#include "03-softmax/softmax.hpp"
#include "06-dropout/dropout.hpp"
#include "sa/nn.hpp"
#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <unsupported/Eigen/SpecialFunctions>  // the vectorized erf GELU needs
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <vector>

namespace sa {

namespace detail {
inline void expect_shape(std::string_view function, std::string_view what, const Matrix& m, int64_t rows,
                         int64_t cols) {
  if (m.rows() != rows || m.cols() != cols)
    throw std::invalid_argument(fmt::format("{}: {} is {}, expected ({}, {})", function, what, shape_str(m), rows, cols));
}
}  // namespace detail

// ===========================================================================
// Linear: Y = X W + b
//   cache: X, the input (the caller keeps it: it is the previous layer's output)
// ===========================================================================
// Chapter 1's linear() returns a new matrix; this one writes into Y, because
// training calls it thousands of times with the same shapes.
inline void linear_forward(const Matrix& X, const Linear& layer, Matrix& Y) {
  if (X.cols() != layer.d_in())
    throw std::invalid_argument(
        fmt::format("linear_forward: X is {} but W is {}", shape_str(X), shape_str(layer.W)));
  detail::expect_shape("linear_forward", "Y", Y, X.rows(), layer.d_out());
  // Y starts as the bias rows and the product is added to it: Eigen would
  // otherwise zero Y before the product and add b in another pass (the
  // same sums, b + X W, one pass fewer).
  if (layer.b) {
    Y.rowwise() = *layer.b;
    Y.noalias() += X * layer.W;
  } else {
    Y.noalias() = X * layer.W;
  }
}

// Y = X W + b, one row at a time: y_i = x_i W + b. Then
//   dX = dY Wᵀ              (each x_i reaches the loss only through y_i)
//   dW = Xᵀ dY = Σ_i x_iᵀ dy_i   (every row used the same W: the rows' gradients add)
//   db = Σ_i dy_i           (column sums of dY, for the same reason)
// The shapes are the check: dW must come out (d_in, d_out) like W.
inline void linear_backward(const Matrix& X, const Linear& layer, const Matrix& dY, Matrix& dX, Linear& grad) {
  detail::expect_shape("linear_backward", "dY", dY, X.rows(), layer.d_out());
  detail::expect_shape("linear_backward", "dX", dX, X.rows(), layer.d_in());
  detail::expect_shape("linear_backward", "grad.W", grad.W, layer.d_in(), layer.d_out());
  dX.noalias() = dY * layer.W.transpose();
  grad.W.noalias() = X.transpose() * dY;
  if (layer.b) *grad.b = dY.colwise().sum();
}

// ===========================================================================
// Embedding: X[b, t] = tok[ids[b, t]] + pos[t]
//   token embedding (chapter 1's lookup) plus a *learned* position row, as in
//   GPT-2, instead of chapter 1's fixed sinusoids.
//   cache: ids
// ===========================================================================
inline void embedding_forward(const std::vector<int64_t>& ids, int64_t seq, const Matrix& tok, const Matrix& pos,
                              Matrix& X) {
  if (seq < 1 || int64_t(ids.size()) % seq != 0)
    throw std::invalid_argument(
        fmt::format("embedding_forward: {} ids do not make sequences of {} tokens", ids.size(), seq));
  if (seq > pos.rows())
    throw std::invalid_argument(
        fmt::format("embedding_forward: sequences of {} tokens but only {} position rows", seq, pos.rows()));
  detail::expect_shape("embedding_forward", "X", X, int64_t(ids.size()), tok.cols());
  for (int64_t r = 0; r < int64_t(ids.size()); ++r) {
    const int64_t id = ids[size_t(r)];
    if (id < 0 || id >= tok.rows())
      throw std::out_of_range(fmt::format("embedding_forward: token id {} outside [0, {})", id, tok.rows()));
    X.row(r) = tok.row(id) + pos.row(r % seq);
  }
}

// A lookup copies rows, so the backward sends each row's gradient back to
// the row it was copied from, and adds when a row was used more than once:
//   d_tok[v] = Σ of dX[b, t] over the positions holding token v
//   d_pos[t] = Σ_b dX[b, t]
// A token that never occurs in the batch gets a zero gradient.
inline void embedding_backward(const std::vector<int64_t>& ids, int64_t seq, const Matrix& dX, Matrix& d_tok,
                               Matrix& d_pos) {
  detail::expect_shape("embedding_backward", "dX", dX, int64_t(ids.size()), d_tok.cols());
  if (d_pos.cols() != d_tok.cols() || seq > d_pos.rows())
    throw std::invalid_argument(fmt::format("embedding_backward: d_pos is {}", shape_str(d_pos)));
  d_tok.setZero();
  d_pos.setZero();
  for (int64_t r = 0; r < int64_t(ids.size()); ++r) {
    d_tok.row(ids[size_t(r)]) += dX.row(r);
    d_pos.row(r % seq) += dX.row(r);
  }
}

// ===========================================================================
// LayerNorm over the last dimension (nn.LayerNorm(d), eps 1e-5):
//   x̂ = (x − mean(x)) · rstd,  rstd = 1 / sqrt(var(x) + eps)  (biased variance)
//   y = x̂ ∘ gamma + beta
//   cache: x̂ and rstd of every row
// ===========================================================================
struct LayerNorm {
  RowVector gamma;  // (d), PyTorch's .weight
  RowVector beta;   // (d), PyTorch's .bias
  float eps = 1e-5f;
  int64_t d() const { return gamma.size(); }
};

// nn.LayerNorm(d) starts as the identity on x̂: gamma = 1, beta = 0. It draws
// nothing from the generator.
inline LayerNorm make_layernorm(int64_t d) { return {RowVector::Ones(d), RowVector::Zero(d), 1e-5f}; }

struct LayerNormCache {
  Matrix X_hat;         // (rows, d)
  Eigen::VectorXf rstd; // (rows)
  LayerNormCache() = default;
  LayerNormCache(int64_t rows, int64_t d) : X_hat(rows, d), rstd(rows) {}
};

inline void layernorm_forward(const Matrix& X, const LayerNorm& ln, Matrix& Y, LayerNormCache& cache) {
  if (X.cols() != ln.d())
    throw std::invalid_argument(fmt::format("layernorm_forward: X is {} but d = {}", shape_str(X), ln.d()));
  detail::expect_shape("layernorm_forward", "Y", Y, X.rows(), X.cols());
  detail::expect_shape("layernorm_forward", "cache.X_hat", cache.X_hat, X.rows(), X.cols());
  if (cache.rstd.size() != X.rows()) throw std::invalid_argument("layernorm_forward: cache.rstd has the wrong size");
  // Row by row, but written on the whole matrix: the rows' means and
  // variances come out of one reduction each, with no per-row loop around
  // 32-number rows. X_hat first holds x − mean.
  const Eigen::VectorXf mean = X.rowwise().mean();
  cache.X_hat = X.colwise() - mean;
  const Eigen::VectorXf var = cache.X_hat.array().square().rowwise().mean();
  cache.rstd = 1.0f / (var.array() + ln.eps).sqrt();
  cache.X_hat.array().colwise() *= cache.rstd.array();
  Y.array() = (cache.X_hat.array().rowwise() * ln.gamma.array()).rowwise() + ln.beta.array();
}

// EXERCISE. Backward of layernorm_forward, from its cache: writes dX (rows, d)
// and grad.gamma, grad.beta (d). Every x_j of a row moves that row's mean and
// variance, so dX is not just dY ∘ gamma · rstd; see the solution's comments
// or the chapter README for the three-term formula. dY and dX must be
// (rows of the cache, d) and grad's gamma and beta of length d; anything
// else is refused with std::invalid_argument.
void layernorm_backward(const Matrix& dY, const LayerNormCache& cache, const LayerNorm& ln, Matrix& dX,
                        LayerNorm& grad);

// ===========================================================================
// GELU, the exact form: GELU(x) = x Φ(x) = ½ x (1 + erf(x / √2)).
//   This is PyTorch's nn.GELU() default (approximate='none'), not the tanh
//   approximation GPT-2 used.
//   cache: X, the input, and Φ(X), which the backward needs again (erf is
//   the dearest part of both passes, so it is computed once)
// ===========================================================================
inline void gelu_forward(const Matrix& X, Matrix& Y, Matrix& Phi) {
  detail::expect_shape("gelu_forward", "Y", Y, X.rows(), X.cols());
  detail::expect_shape("gelu_forward", "Phi", Phi, X.rows(), X.cols());
  // Eigen's erf is vectorized; std::erf element by element made GELU the
  // slowest layer of the model.
  const float inv_sqrt2 = float(1.0 / std::numbers::sqrt2);
  Phi.array() = 0.5f * (1.0f + (X.array() * inv_sqrt2).erf());
  Y.array() = X.array() * Phi.array();
}
// Without a cache (inference: nothing will go backward).
inline void gelu_forward(const Matrix& X, Matrix& Y) {
  Matrix Phi(X.rows(), X.cols());
  gelu_forward(X, Y, Phi);
}

// GELU'(x) = Φ(x) + x φ(x), with Φ the standard normal CDF and
// φ(x) = exp(−x²/2) / √(2π) its density (the derivative of x Φ(x) by the
// product rule). dX = dY ∘ GELU'(X).
inline void gelu_backward(const Matrix& X, const Matrix& Phi, const Matrix& dY, Matrix& dX) {
  detail::expect_shape("gelu_backward", "Phi", Phi, X.rows(), X.cols());
  detail::expect_shape("gelu_backward", "dY", dY, X.rows(), X.cols());
  detail::expect_shape("gelu_backward", "dX", dX, X.rows(), X.cols());
  const float inv_sqrt_2pi = float(1.0 / std::sqrt(2.0 * std::numbers::pi));
  const auto x = X.array();
  dX.array() = dY.array() * (Phi.array() + x * inv_sqrt_2pi * (-0.5f * x.square()).exp());
}

// ===========================================================================
// Multi-head causal self-attention, for a whole batch at once.
//   QKV (batch * seq, 3 d_model) is the output of one Linear: columns
//   [0, d) hold Q, [d, 2d) K, [2d, 3d) V, and inside each of them head h
//   owns the d_k = d_model / n_heads columns [h d_k, (h + 1) d_k).
//   For one head of one sequence:
//     S = Q Kᵀ / √d_k,  masked (−inf where the mask forbids),
//     P = softmax(S) (chapter 3's softmax_rows),  O = P V
//   O (batch * seq, d_model) holds the heads side by side, ready for W_o.
//   P is PyTorch's (batch, n_heads, seq, seq) weights tensor stored as
//   batch * n_heads * seq rows: row ((b n_heads + h) seq + i) is query i of
//   head h of sequence b.
//   In training, chapter 6's dropout may sit between the weights and V:
//     P_drop = dropout(P, p),  O = P_drop V
//   (see AttentionDropout; evaluation passes none, and O = P V).
//   cache: QKV (the caller's), P, and with dropout P_drop and its keep mask
// ===========================================================================
struct AttentionDims {
  int64_t batch, seq, n_heads, d_model, d_k;
};

inline AttentionDims attention_dims(std::string_view function, const Matrix& QKV, int64_t batch, int64_t n_heads) {
  if (batch < 1 || QKV.rows() % batch != 0)
    throw std::invalid_argument(fmt::format("{}: {} rows do not split into {} sequences", function, QKV.rows(), batch));
  if (QKV.cols() % 3 != 0 || n_heads < 1 || (QKV.cols() / 3) % n_heads != 0)
    throw std::invalid_argument(
        fmt::format("{}: QKV has {} columns, not 3 * d_model with d_model divisible by {} heads", function,
                    QKV.cols(), n_heads));
  const int64_t d_model = QKV.cols() / 3;
  return {batch, QKV.rows() / batch, n_heads, d_model, d_model / n_heads};
}

// Rows (batch * n_heads * seq) of a scores or weights matrix for head h of
// sequence b, and the (seq, d_k) block of Q (part 0), K (1) or V (2).
inline auto head_rows(Matrix& M, const AttentionDims& a, int64_t b, int64_t h) {
  return M.middleRows((b * a.n_heads + h) * a.seq, a.seq);
}
inline auto head_rows(const Matrix& M, const AttentionDims& a, int64_t b, int64_t h) {
  return M.middleRows((b * a.n_heads + h) * a.seq, a.seq);
}
inline auto head_block(Matrix& M, const AttentionDims& a, int64_t part, int64_t b, int64_t h) {
  return M.block(b * a.seq, part * a.d_model + h * a.d_k, a.seq, a.d_k);
}
inline auto head_block(const Matrix& M, const AttentionDims& a, int64_t part, int64_t b, int64_t h) {
  return M.block(b * a.seq, part * a.d_model + h * a.d_k, a.seq, a.d_k);
}

// ---------------------------------------------------------------------------
// Every sequence at once ("lanes")
//
// For one head of one sequence the products are tiny: (seq, d_k) by
// (d_k, seq), 12 × 8 by 8 × 12 in the reversal task, about a thousand
// multiply-adds. A GEMM library (Eigen here) spends longer preparing such a
// product (packing, blocking) than computing it, and a training step of the
// reversal task asks for 6,144 of them (2 layers × 4 heads × 128 sequences,
// 2 products forward and 4 backward): they took 40% of the step.
// Every sequence has the same shapes, though, so the model runs each
// formula on all `batch` sequences together. It transposes a matrix so that
// its columns are the sequences, the lanes:
//   lanes(i * M.cols() + c, b) = M(b * seq + i, c)
// (sequence b's block of rows, read row after row, is column b). Then an
// entry of a formula, say S_ij = Σ_c Q_ic K_jc, is a handful of operations
// on whole rows of `batch` numbers, which the compiler vectorizes. The
// arithmetic is the per-head formulas' own; only the order of the loops
// changed.
//
// The transposition goes by square tiles of one SIMD register's width (16
// floats with AVX-512), turned inside the registers by Eigen's ptranspose
// (the kernel its own matrix products use); the edges that do not fill a
// tile go one number at a time. Copying number by number made the copies
// cost as much as the arithmetic they serve.
namespace detail {
// A SIMD register type as a template argument drops its alignment
// attribute, harmlessly here (loads and stores are unaligned); GCC and
// clang say so, and Eigen silences the same warning inside its own headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
// dst (cols, rows) = src (rows, cols) transposed; ld_* are the row strides.
inline void transpose_into(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst, int64_t ld_dst) {
  using Packet = Eigen::internal::packet_traits<float>::type;
  constexpr int64_t kTile = Eigen::internal::unpacket_traits<Packet>::size;
  const int64_t full_rows = rows - rows % kTile, full_cols = cols - cols % kTile;
  for (int64_t r0 = 0; r0 < full_rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < full_cols; c0 += kTile) {
      Eigen::internal::PacketBlock<Packet, int(kTile)> tile;
      for (int64_t k = 0; k < kTile; ++k) tile.packet[k] = Eigen::internal::ploadu<Packet>(src + (r0 + k) * ld_src + c0);
      Eigen::internal::ptranspose(tile);
      for (int64_t k = 0; k < kTile; ++k) Eigen::internal::pstoreu(dst + (c0 + k) * ld_dst + r0, tile.packet[k]);
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = r < full_rows ? full_cols : 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
}
#pragma GCC diagnostic pop
}  // namespace detail

// M has batch * seq rows; lanes becomes (seq * M.cols(), batch). M may be a
// Mask, whose true becomes 1 and false 0.
template <class Source>
void to_lanes(const Source& M, int64_t batch, Matrix& lanes) {
  const int64_t per_sequence = M.size() / batch;
  lanes.resize(per_sequence, batch);
  if constexpr (std::is_same_v<typename Source::Scalar, float>) {
    detail::transpose_into(M.data(), batch, per_sequence, per_sequence, lanes.data(), batch);
  } else {
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t r = 0; r < per_sequence; ++r) lanes(r, b) = float(M.data()[b * per_sequence + r]);
  }
}
// The way back: M (batch * seq rows, allocated) from its lanes.
template <class Lanes>  // a Matrix or a Map of one
void from_lanes(const Lanes& lanes, int64_t batch, Matrix& M) {
  if (lanes.cols() != batch || lanes.size() != M.size())
    throw std::invalid_argument(fmt::format("from_lanes: lanes {} do not hold {} for {} sequences", shape_str(lanes),
                                            shape_str(M), batch));
  detail::transpose_into(lanes.data(), lanes.rows(), batch, batch, M.data(), lanes.rows());
}

// `count` rows of a lanes matrix, `step` rows apart from row `first`, as a
// matrix of their own: the terms of one sum of a formula. Multiplied
// element by element with another such matrix, .colwise().sum() adds them
// up lane by lane, the running sums staying in registers (twice as fast as
// adding one row at a time into memory).
template <class Lanes>
auto lane_rows(const Lanes& M, int64_t first, int64_t count, int64_t step = 1) {
  return Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>(M.data() + first * M.cols(), count, M.cols(),
                                                           Eigen::OuterStride<>(step * M.cols()));
}

// The keys a query i may see, first to last (mask(i, j) true); a key
// inside that span that the mask forbids has weight 0. A query allowed no
// key gets first > last.
struct KeySpan {
  int64_t first, last;
  int64_t count() const { return std::max<int64_t>(0, last - first + 1); }
};
inline std::vector<KeySpan> key_spans(const Mask& mask) {
  std::vector<KeySpan> spans;
  for (int64_t i = 0; i < mask.rows(); ++i) {
    KeySpan span{mask.cols(), -1};
    for (int64_t j = 0; j < mask.cols(); ++j)
      if (mask(i, j)) span = {std::min(span.first, j), j};
    spans.push_back(span);
  }
  return spans;
}

// Attention dropout for one forward and its backward. The forward reads p
// and gen and fills P_drop and keep; the backward reads all but gen.
// p = 0 is the identity and draws nothing (chapter 6), so a forward with
// p = 0 is bit for bit a forward without dropout.
struct AttentionDropout {
  double p = 0;              // drop probability of each weight, in [0, 1)
  Generator* gen = nullptr;  // the draws, one per weight in P's memory order, as F.dropout takes them
  Matrix P_drop;             // dropout(P): what multiplied V, like P
  Mask keep;                 // chapter 6's mask: true where the weight survived
  bool active() const { return p > 0; }
};

// The lanes attention's forward and backward work in, kept from one call to
// the next. Allocated afresh, a dozen of them per call came back from the
// system as page faults every step (10% of the backward's time).
struct AttentionLanes {
  Matrix QKV, S, O, W, P, dO, keep, dS, dQKV, row_a, row_b, row_c;
};
inline AttentionLanes& attention_lanes() {
  thread_local AttentionLanes lanes;
  return lanes;
}

// attention_forward's refusal of a score that is not finite: finds the
// first lane (sequence) of query i whose sum went NaN or whose smallest
// score is -inf, and in it the first NaN or +inf score, or else the first
// -inf one.
[[noreturn]] inline void attention_bad_score(const Matrix& S, const Matrix& row_sum, const Matrix& row_min,
                                             const Mask& mask, int64_t T, int64_t i, int64_t h) {
  int64_t b = 0;
  while (!std::isnan(row_sum(0, b)) && std::isfinite(row_min(0, b))) ++b;
  auto first = [&](auto&& bad) {
    for (int64_t j = 0; j < T; ++j)
      if (mask(i, j) && bad(S(i * T + j, b))) return j;
    return int64_t(-1);
  };
  int64_t j = first([](float x) { return std::isnan(x) || x == std::numeric_limits<float>::infinity(); });
  if (j < 0) j = first([](float x) { return !std::isfinite(x); });
  throw std::invalid_argument(fmt::format(
      "attention_forward: the score of query {} and key {} in head {} of sequence {} is {}; Q and K must be finite, "
      "and small enough that Q Kᵀ / √d_k does not overflow",
      i, j, h, b, S(i * T + j, b)));
}

// `mask` is (seq, seq), true = allowed (chapter 5's causal_mask for the
// model). P gets the weights, O the output. `scores` (batch * n_heads * seq,
// seq), as many numbers as P, is a work buffer: it holds the weights of
// every head as lanes until O is computed. `dropout` (training only) drops
// weights after the softmax: every (b, h, i) row of P stays a distribution,
// but O reads P_drop, whose rows sum to 1 only on average. p = 1 is refused:
// it would zero every output and leave nothing to learn. A score that is NaN
// or infinite (QKV holds one, or Q Kᵀ overflowed) is refused with
// std::invalid_argument: chapter 3's softmax_rows refuses NaN and +inf, and
// a -inf that no mask put there is no weight of 0 either.
inline void attention_forward(const Matrix& QKV, int64_t batch, int64_t n_heads, const Mask& mask, Matrix& scores,
                              Matrix& P, Matrix& O, AttentionDropout* dropout = nullptr) {
  const AttentionDims a = attention_dims("attention_forward", QKV, batch, n_heads);
  if (mask.rows() != a.seq || mask.cols() != a.seq)
    throw std::invalid_argument(fmt::format("attention_forward: mask is ({}, {}) for sequences of {} tokens",
                                            mask.rows(), mask.cols(), a.seq));
  detail::expect_shape("attention_forward", "scores", scores, a.batch * a.n_heads * a.seq, a.seq);
  detail::expect_shape("attention_forward", "O", O, QKV.rows(), a.d_model);
  if (dropout && !(dropout->p >= 0 && dropout->p < 1))
    throw std::invalid_argument(fmt::format("attention_forward: attention dropout p must be in [0, 1), got {}", dropout->p));
  if (dropout && dropout->active() && !dropout->gen)
    throw std::invalid_argument("attention_forward: attention dropout needs a generator for its draws");
  const int64_t T = a.seq, d_k = a.d_k, d = a.d_model, X = QKV.cols();
  // Divide (not multiply by 1/√d_k) as PyTorch's `/ math.sqrt(d_k)` does.
  const float sqrt_dk = std::sqrt(float(d_k));
  P.resize(a.batch * a.n_heads * T, T);
  // Lanes: QKV's row i * 3d + col is entry (i, col) of every sequence, and
  // the weights' row (h T + i) T + j is weight (i, j) of head h, P's own
  // order within a sequence; they live in `scores`.
  AttentionLanes& lanes = attention_lanes();
  to_lanes(QKV, a.batch, lanes.QKV);
  const Matrix& qkv = lanes.QKV;
  Eigen::Map<Matrix> weights(scores.data(), a.n_heads * T * T, a.batch);
  Matrix &S = lanes.S, &O_lanes = lanes.O;
  Matrix &row_max = lanes.row_a, &row_min = lanes.row_c, &row_sum = lanes.row_b;
  S.resize(T * T, a.batch);
  row_max.resize(1, a.batch);
  row_min.resize(1, a.batch);
  row_sum.resize(1, a.batch);

  // 1. The weights of every head: S = Q Kᵀ / √d_k where the mask allows,
  //    and P = chapter 3's softmax over each query's keys (stable: the
  //    maximum is subtracted first; a masked weight is exactly 0, and a
  //    query allowed no key gets a row of zeros).
  for (int64_t h = 0; h < a.n_heads; ++h) {
    auto Q = [&](int64_t i) { return lane_rows(qkv, i * X + h * d_k, d_k); };  // Q_i0 .. Q_i(d_k-1)
    auto K = [&](int64_t j) { return lane_rows(qkv, j * X + d + h * d_k, d_k); };
    auto P_ij = [&](int64_t i, int64_t j) { return weights.row((h * T + i) * T + j); };
    for (int64_t i = 0; i < T; ++i) {
      row_max.setConstant(-std::numeric_limits<float>::infinity());
      row_min.setConstant(std::numeric_limits<float>::infinity());
      for (int64_t j = 0; j < T; ++j) {
        if (!mask(i, j)) continue;
        auto S_ij = S.row(i * T + j);
        S_ij = (Q(i).array() * K(j).array()).colwise().sum() / sqrt_dk;  // Σ_c Q_ic K_jc / √d_k
        row_max = row_max.cwiseMax(S_ij);
        row_min = row_min.cwiseMin(S_ij);
      }
      row_sum.setZero();
      for (int64_t j = 0; j < T; ++j) {
        if (!mask(i, j)) {
          P_ij(i, j).setZero();
          continue;
        }
        P_ij(i, j).array() = (S.row(i * T + j) - row_max).array().exp();
        row_sum += P_ij(i, j);
      }
      // A NaN or +inf score makes its lane's sum NaN (exp(NaN), or
      // +inf − +inf); each sum is at most T, so the total is NaN only then.
      // A -inf score would pass as a masked one: refused too.
      if (std::isnan(row_sum.sum()) || row_min.minCoeff() == -std::numeric_limits<float>::infinity())
        attention_bad_score(S, row_sum, row_min, mask, T, i, h);
      // row_sum is 0 only in the lanes of a query allowed no key, whose
      // weights are all 0 already: divide the others.
      for (int64_t j = 0; j < T; ++j)
        if (mask(i, j)) P_ij(i, j).array() /= row_sum.array();
    }
  }
  from_lanes(weights, a.batch, P);
  // 2. P's rows are PyTorch's (b, h, i) order, so one dropout call over all
  //    of P draws for the same weights in the same order as F.dropout on the
  //    (batch, n_heads, seq, seq) tensor.
  const bool dropped = dropout && dropout->active();
  if (dropped) {
    DropoutResult result = sa::dropout(P, dropout->p, *dropout->gen);
    dropout->P_drop = std::move(result.output);
    dropout->keep = std::move(result.keep);
    to_lanes(dropout->P_drop, a.batch, lanes.W);
  }
  const Eigen::Map<const Matrix> W(dropped ? lanes.W.data() : weights.data(), weights.rows(), a.batch);
  // 3. O = weights · V, head by head: O_ic = Σ_j W_ij V_jc over the allowed
  //    keys (a masked weight is 0, with or without dropout). O's lanes are
  //    laid out like QKV's: row i d + h d_k + c.
  O_lanes.resize(T * d, a.batch);
  const std::vector<KeySpan> keys = key_spans(mask);
  for (int64_t h = 0; h < a.n_heads; ++h)
    for (int64_t i = 0; i < T; ++i) {
      const KeySpan span = keys[size_t(i)];
      if (span.count() == 0) {  // a query that sees nothing: O_i = 0
        O_lanes.middleRows(i * d + h * d_k, d_k).setZero();
        continue;
      }
      const auto W_i = lane_rows(W, (h * T + i) * T + span.first, span.count());
      for (int64_t c = 0; c < d_k; ++c) {
        const auto V_c = lane_rows(qkv, span.first * X + 2 * d + h * d_k + c, span.count(), X);  // V_jc over the span
        O_lanes.row(i * d + h * d_k + c) = (W_i.array() * V_c.array()).colwise().sum();
      }
    }
  from_lanes(O_lanes, a.batch, O);
}

// EXERCISE. Backward of attention_forward: given dO (batch * seq, d_model),
// writes dQKV (batch * seq, 3 d_model) in QKV's layout. dP (batch * n_heads
// * seq, seq), laid out like P, is a work buffer (as `scores` is for the
// forward). For one head of one sequence:
//   dV = Pᵀ dO      dP = dO Vᵀ      dS = softmax_backward(P, dP)  (chapter 3)
//   dQ = dS K / √d_k      dK = dSᵀ Q / √d_k
// The mask needs no backward of its own: a masked weight is exactly 0, and
// softmax_backward multiplies by P, so its dS is 0 too.
// With the forward's `dropout` (active: p > 0), V was multiplied by P_drop,
// and dropout sits between P and P_drop (chapter 6):
//   dV = P_dropᵀ dO      dP = dropout_backward(dO Vᵀ, keep, p)
// and the rest is unchanged: softmax_backward still takes P, the weights
// before dropout. A dropped weight passes no gradient to its score
// through dP, but its score still moves through the row's softmax.
// Refused with std::invalid_argument: QKV whose rows do not split into
// `batch` sequences or whose d_model does not split into n_heads; P or dP
// not (batch * n_heads * seq, seq); dO not (batch * seq, d_model); dQKV not
// QKV's shape; an active dropout whose P_drop or keep is not P's shape.
void attention_backward(const Matrix& QKV, const Matrix& P, const Matrix& dO, int64_t batch, int64_t n_heads,
                        Matrix& dP, Matrix& dQKV, const AttentionDropout* dropout = nullptr);

// ===========================================================================
// Residual connection: x_out = x + f(x). Its backward is the reason deep
// networks train: the gradient reaches x unchanged along the identity path,
// and f's backward adds its own part, dx = dx_out + f'(x)ᵀ dx_out. It is two
// lines in the model (an addition forward, an addition backward), so it has
// no function of its own.
// ===========================================================================

// ===========================================================================
// Cross-entropy over logits, only where a target is given:
//   loss = mean over the counted rows i of  −log softmax(logits_i)[t_i]
//        = mean of  logsumexp(logits_i) − logits_i[t_i]
//   A row whose target is kIgnore does not count (PyTorch's ignore_index):
//   that is how the reversal task puts the loss only on the reversed half.
//   cache: probs = softmax of every counted row (ignored rows: 0)
// ===========================================================================
inline constexpr int64_t kIgnore = -100;  // PyTorch's default ignore_index

// Returns the mean loss over the counted rows. Refuses a target outside
// [0, vocab) (std::out_of_range) and a batch with no counted row
// (std::invalid_argument: PyTorch would return NaN, 0 / 0).
inline float cross_entropy_forward(const Matrix& logits, const std::vector<int64_t>& targets, Matrix& probs) {
  if (int64_t(targets.size()) != logits.rows())
    throw std::invalid_argument(
        fmt::format("cross_entropy_forward: {} targets for {} rows of logits", targets.size(), logits.rows()));
  detail::expect_shape("cross_entropy_forward", "probs", probs, logits.rows(), logits.cols());
  double total = 0.0;
  int64_t counted = 0;
  for (int64_t i = 0; i < logits.rows(); ++i) {
    const int64_t t = targets[size_t(i)];
    if (t == kIgnore) {
      probs.row(i).setZero();
      continue;
    }
    if (t < 0 || t >= logits.cols())
      throw std::out_of_range(fmt::format("cross_entropy_forward: target {} outside [0, {})", t, logits.cols()));
    // log-softmax computed stably (chapter 3's max trick): never log(p) of
    // a p that underflowed to 0.
    const auto z = logits.row(i).array();
    const float z_max = z.maxCoeff();
    const float log_sum = z_max + std::log((z - z_max).exp().sum());
    probs.row(i) = (z - log_sum).exp();
    total += double(log_sum - z(t));
    ++counted;
  }
  if (counted == 0) throw std::invalid_argument("cross_entropy_forward: every target is kIgnore; nothing to average");
  return float(total / double(counted));
}

// EXERCISE. Backward of cross_entropy_forward (with respect to the logits,
// for the mean loss): writes dlogits (rows, vocab). A counted row gets
// (probs_i − onehot(t_i)) / n_counted; an ignored row gets 0. Refused: a
// number of targets other than probs' rows, dlogits not probs' shape, or
// every target kIgnore (std::invalid_argument); a target outside
// [0, vocab) (std::out_of_range).
void cross_entropy_backward(const Matrix& probs, const std::vector<int64_t>& targets, Matrix& dlogits);

// ===========================================================================
// Adam (torch.optim.Adam defaults: betas (0.9, 0.999), eps 1e-8, no weight
// decay, no amsgrad). For every parameter θ with gradient g, at step t = 1, 2, ...
//   m ← β1 m + (1 − β1) g          v ← β2 v + (1 − β2) g²
//   θ ← θ − lr · m / (1 − β1^t) / ( sqrt(v) / sqrt(1 − β2^t) + eps )
// m and v start at 0; the divisions by (1 − β^t) undo that start's pull
// toward 0 (bias correction). Written exactly in this order, as PyTorch's
// single-tensor Adam computes it.
// ===========================================================================
struct AdamConfig {
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

// EXERCISE. One Adam step for one parameter tensor, element by element: the
// four spans have the same length; m and v are this tensor's moment buffers
// (zeros before the first step); t is this step's number, 1 for the first.
// Spans of different lengths, or t < 1, are refused with std::invalid_argument.
void adam_step(std::span<float> param, std::span<const float> grad, std::span<float> m, std::span<float> v, int64_t t,
               const AdamConfig& cfg);

}  // namespace sa
