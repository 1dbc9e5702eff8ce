// Chapter 7: the layers of the model, forward and backward, in the order
// the data flows through them (training.hpp says what each computes and
// caches). The four backward passes that are the chapter's exercises are
// not here: they are in solutions/ and exercises/07-training/training.cpp.
#include "07-training/training.hpp"

#include "03-softmax/softmax.hpp"
#include "05-causal-mask/mask.hpp"
#include "06-dropout/dropout.hpp"

#include <unsupported/Eigen/SpecialFunctions>  // the vectorized erf GELU needs
#include <fmt/core.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <utility>
#include <vector>

namespace sa {

void linear_forward(const Matrix& X, const Linear& layer, Matrix& Y) {
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

void linear_backward(const Matrix& X, const Linear& layer, const Matrix& dY, Matrix& dX, Linear& grad) {
  detail::expect_shape("linear_backward", "dY", dY, X.rows(), layer.d_out());
  detail::expect_shape("linear_backward", "dX", dX, X.rows(), layer.d_in());
  detail::expect_shape("linear_backward", "grad.W", grad.W, layer.d_in(), layer.d_out());
  dX.noalias() = dY * layer.W.transpose();
  grad.W.noalias() = X.transpose() * dY;
  // db = 1ᵀ dY, the sum of dY's rows, written as a product: Eigen's
  // matrix-vector product reads the row-major dY row by row, where
  // colwise().sum() walks it column by column (3 to 5 times slower at
  // 768 x 512, with AVX2 and AVX-512 alike).
  if (layer.b) grad.b->noalias() = RowVector::Ones(dY.rows()) * dY;
}

void embedding_forward(const std::vector<int64_t>& ids, int64_t seq, const Matrix& tok, const Matrix& pos,
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

void embedding_backward(const std::vector<int64_t>& ids, int64_t seq, const Matrix& dX, Matrix& d_tok,
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

void layernorm_forward(const Matrix& X, const LayerNorm& ln, Matrix& Y, LayerNormCache& cache) {
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

void gelu_forward(const Matrix& X, Matrix& Y, Matrix& dGelu) {
  detail::expect_shape("gelu_forward", "Y", Y, X.rows(), X.cols());
  detail::expect_shape("gelu_forward", "dGelu", dGelu, X.rows(), X.cols());
  // Row by row, so that Φ(x), written once to a row of scratch, is read
  // back from the nearest cache by both formulas. Eigen's erf and exp are
  // vectorized; std::erf element by element made GELU the slowest layer of
  // the model.
  const float inv_sqrt2 = float(1.0 / std::numbers::sqrt2);
  const float inv_sqrt_2pi = float(1.0 / std::sqrt(2.0 * std::numbers::pi));
  RowVector Phi(X.cols());
  for (int64_t i = 0; i < X.rows(); ++i) {
    const auto x = X.row(i).array();
    Phi.array() = 0.5f * (1.0f + (x * inv_sqrt2).erf());
    Y.row(i).array() = x * Phi.array();
    dGelu.row(i).array() = Phi.array() + x * inv_sqrt_2pi * (-0.5f * x.square()).exp();
  }
}

void gelu_forward(const Matrix& X, Matrix& Y) {
  detail::expect_shape("gelu_forward", "Y", Y, X.rows(), X.cols());
  const float inv_sqrt2 = float(1.0 / std::numbers::sqrt2);
  Y.array() = X.array() * (0.5f * (1.0f + (X.array() * inv_sqrt2).erf()));
}

void gelu_backward(const Matrix& dGelu, const Matrix& dY, Matrix& dX) {
  detail::expect_shape("gelu_backward", "dY", dY, dGelu.rows(), dGelu.cols());
  detail::expect_shape("gelu_backward", "dX", dX, dGelu.rows(), dGelu.cols());
  dX.array() = dY.array() * dGelu.array();
}

// One head of one sequence at a time, in the book's names: the scores, the
// mask, chapter 3's softmax, then the weights times V.
void attention_forward(const Matrix& QKV, int64_t batch, int64_t n_heads, const Mask& mask, Matrix& scores, Matrix& P,
                       Matrix& O, AttentionDropout* dropout) {
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
  // Divide (not multiply by 1/√d_k) as PyTorch's `/ math.sqrt(d_k)` does.
  const float sqrt_dk = std::sqrt(float(a.d_k));
  P.resize(a.batch * a.n_heads * a.seq, a.seq);

  // 1. The weights: S = Q Kᵀ / √d_k, forbidden keys set to −inf (chapter
  //    5's apply_mask), P = softmax of each row (chapter 3's softmax_rows:
  //    a masked weight is exactly 0, a query allowed no key gets zeros).
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.n_heads; ++h) {
      const auto Q = head_block(QKV, a, 0, b, h), K = head_block(QKV, a, 1, b, h);
      auto S = head_rows(scores, a, b, h);
      S.noalias() = Q * K.transpose();
      S /= sqrt_dk;
      for (int64_t i = 0; i < a.seq; ++i)  // a score the mask allows must be a number
        for (int64_t j = 0; j < a.seq; ++j)
          if (mask(i, j) && !std::isfinite(S(i, j)))
            throw std::invalid_argument(fmt::format(
                "attention_forward: the score of query {} and key {} in head {} of sequence {} is {}; Q and K must "
                "be finite, and small enough that Q Kᵀ / √d_k does not overflow",
                i, j, h, b, S(i, j)));
      head_rows(P, a, b, h) = softmax_rows(apply_mask(S, mask));
    }

  // 2. Dropout on the weights (training): one call over all of P draws for
  //    the same weights in the same order as F.dropout on PyTorch's
  //    (batch, n_heads, seq, seq) tensor.
  const bool dropped = dropout && dropout->active();
  if (dropped) {
    DropoutResult result = sa::dropout(P, dropout->p, *dropout->gen);
    dropout->P_drop = std::move(result.output);
    dropout->keep = std::move(result.keep);
  }
  const Matrix& W = dropped ? dropout->P_drop : P;  // what multiplies V

  // 3. O = W V, head by head, each head's d_k columns side by side.
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.n_heads; ++h)
      O.block(b * a.seq, h * a.d_k, a.seq, a.d_k).noalias() = head_rows(W, a, b, h) * head_block(QKV, a, 2, b, h);
}

float cross_entropy_forward(const Matrix& logits, const std::vector<int64_t>& targets, Matrix& probs) {
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

}  // namespace sa
