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
// exercises/07-training/training.cpp is yours. The forwards and the other
// layers are defined in layers.cpp, compiled once into both tracks.
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

#include <fmt/core.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string_view>
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
void linear_forward(const Matrix& X, const Linear& layer, Matrix& Y);

// Y = X W + b, one row at a time: y_i = x_i W + b. Then
//   dX = dY Wᵀ              (each x_i reaches the loss only through y_i)
//   dW = Xᵀ dY = Σ_i x_iᵀ dy_i   (every row used the same W: the rows' gradients add)
//   db = Σ_i dy_i           (column sums of dY, for the same reason)
// The shapes are the check: dW must come out (d_in, d_out) like W.
void linear_backward(const Matrix& X, const Linear& layer, const Matrix& dY, Matrix& dX, Linear& grad);

// ===========================================================================
// Embedding: X[b, t] = tok[ids[b, t]] + pos[t]
//   token embedding (chapter 1's lookup) plus a *learned* position row, as in
//   GPT-2, instead of chapter 1's fixed sinusoids.
//   cache: ids
// ===========================================================================
void embedding_forward(const std::vector<int64_t>& ids, int64_t seq, const Matrix& tok, const Matrix& pos,
                       Matrix& X);

// A lookup copies rows, so the backward sends each row's gradient back to
// the row it was copied from, and adds when a row was used more than once:
//   d_tok[v] = Σ of dX[b, t] over the positions holding token v
//   d_pos[t] = Σ_b dX[b, t]
// A token that never occurs in the batch gets a zero gradient.
void embedding_backward(const std::vector<int64_t>& ids, int64_t seq, const Matrix& dX, Matrix& d_tok,
                        Matrix& d_pos);

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

void layernorm_forward(const Matrix& X, const LayerNorm& ln, Matrix& Y, LayerNormCache& cache);

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
//   cache: GELU'(X), the derivative at every input, all the backward needs
//   (the forward has Φ(X) at hand: erf, the dearest part, is computed once,
//   and X itself need not be kept)
// ===========================================================================
// GELU'(x) = Φ(x) + x φ(x), with Φ the standard normal CDF and
// φ(x) = exp(−x²/2) / √(2π) its density (the derivative of x Φ(x) by the
// product rule). Y and dGelu must be X's shape.
void gelu_forward(const Matrix& X, Matrix& Y, Matrix& dGelu);
// Without a cache (inference: nothing will go backward).
void gelu_forward(const Matrix& X, Matrix& Y);

// dX = dY ∘ GELU'(X), from the forward's dGelu.
void gelu_backward(const Matrix& dGelu, const Matrix& dY, Matrix& dX);

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

// `mask` is (seq, seq), true = allowed (chapter 5's causal_mask for the
// model). P gets the weights, O the output. `scores` (batch * n_heads * seq,
// seq), laid out like P, is a work buffer: it holds the scaled scores S.
// `dropout` (training only) drops weights after the softmax: every
// (b, h, i) row of P stays a distribution, but O reads P_drop, whose rows
// sum to 1 only on average. p = 1 is refused: it would zero every output
// and leave nothing to learn. A score that is NaN or infinite (QKV holds
// one, or Q Kᵀ overflowed) is refused with std::invalid_argument: chapter
// 3's softmax_rows refuses NaN and +inf, and a -inf that no mask put there
// is no weight of 0 either.
//
// This is the formula as written above, one head of one sequence at a
// time (layers.cpp). The model trains with attention_forward_lanes
// (attention_lanes.hpp), which computes the same numbers for every
// sequence at once, several times faster at this model's small sizes.
void attention_forward(const Matrix& QKV, int64_t batch, int64_t n_heads, const Mask& mask, Matrix& scores, Matrix& P,
                       Matrix& O, AttentionDropout* dropout = nullptr);

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
float cross_entropy_forward(const Matrix& logits, const std::vector<int64_t>& targets, Matrix& probs);

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
