// Reference solutions of chapter 7: the four backward passes (and the
// optimizer step) that are the chapter's exercises. Their forwards, and the
// other layers, are in chapters/07-training/training.hpp.
#include "07-training/training.hpp"

#include "03-softmax/softmax.hpp"
#include "06-dropout/dropout.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>

namespace sa {

void layernorm_backward(const Matrix& dY, const LayerNormCache& cache, const LayerNorm& ln, Matrix& dX,
                        LayerNorm& grad) {
  const Matrix& X_hat = cache.X_hat;
  detail::expect_shape("layernorm_backward", "dY", dY, X_hat.rows(), ln.d());
  detail::expect_shape("layernorm_backward", "dX", dX, X_hat.rows(), ln.d());
  if (grad.gamma.size() != ln.d() || grad.beta.size() != ln.d())
    throw std::invalid_argument(fmt::format("layernorm_backward: grad holds {} and {} values, expected {}",
                                            grad.gamma.size(), grad.beta.size(), ln.d()));
  // y = x̂ ∘ gamma + beta: the parameters see every row, so their gradients
  // are sums over the rows.
  grad.gamma = (dY.array() * X_hat.array()).colwise().sum();
  grad.beta = dY.colwise().sum();

  // Back through x̂ = (x − μ) r with μ = mean(x), r = 1/sqrt(var(x) + eps).
  // With g = dY ∘ gamma (the gradient reaching x̂), the chain rule through
  // x̂ directly, through μ and through r gives, for the d entries of a row,
  //   dx = r (g − mean(g) − x̂ mean(g ∘ x̂)).
  // The mean(g) term is μ's share (shifting x shifts μ equally, so only the
  // part of g that is not a constant survives); the x̂ mean(g ∘ x̂) term is
  // r's share (scaling x does not change x̂).
  for (int64_t i = 0; i < dY.rows(); ++i) {
    const auto g = dY.row(i).array() * ln.gamma.array();
    const auto x_hat = X_hat.row(i).array();
    const float mean_g = g.mean();
    const float mean_gx = (g * x_hat).mean();
    dX.row(i) = cache.rstd(i) * (g - mean_g - x_hat * mean_gx);
  }
}

void attention_backward(const Matrix& QKV, const Matrix& P, const Matrix& dO, int64_t batch, int64_t n_heads,
                        Matrix& dP, Matrix& dQKV, const AttentionDropout* dropout) {
  const AttentionDims a = attention_dims("attention_backward", QKV, batch, n_heads);
  detail::expect_shape("attention_backward", "P", P, a.batch * a.n_heads * a.seq, a.seq);
  detail::expect_shape("attention_backward", "dO", dO, QKV.rows(), a.d_model);
  detail::expect_shape("attention_backward", "dP", dP, P.rows(), P.cols());
  detail::expect_shape("attention_backward", "dQKV", dQKV, QKV.rows(), QKV.cols());
  const bool dropped = dropout && dropout->active();
  if (dropped && (dropout->P_drop.rows() != P.rows() || dropout->P_drop.cols() != P.cols() ||
                  dropout->keep.rows() != P.rows() || dropout->keep.cols() != P.cols()))
    throw std::invalid_argument(fmt::format("attention_backward: dropout's P_drop {} and keep ({}, {}) are not P's {}",
                                            shape_str(dropout->P_drop), dropout->keep.rows(), dropout->keep.cols(),
                                            shape_str(P)));
  const float sqrt_dk = std::sqrt(float(a.d_k));

  // O = W V with W = P, or P_drop in training with dropout: a matrix product,
  // so dV = Wᵀ dO and dW = dO Vᵀ (chapter-1 rules for Y = X W, with W in
  // the role of X).
  const Matrix& W = dropped ? dropout->P_drop : P;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.n_heads; ++h) {
      const auto dO_bh = head_block(dO, a, 0, b, h);
      head_block(dQKV, a, 2, b, h).noalias() = head_rows(W, a, b, h).transpose() * dO_bh;
      head_rows(dP, a, b, h).noalias() = dO_bh * head_block(QKV, a, 2, b, h).transpose();
    }
  // P_drop = dropout(P) with its mask fixed: chapter 6's backward turns
  // dP_drop into dP (zero where a weight was dropped, 1/(1 − p) elsewhere).
  if (dropped) dP = dropout_backward(dP, dropout->keep, dropout->p);

  // P = softmax(S), row by row: chapter 3's vector-Jacobian product, once
  // for every row of every head. Masked entries have P = 0, so dS = 0 there.
  const Matrix dS = softmax_backward(P, dP);

  // S = Q Kᵀ / √d_k: dQ = dS K / √d_k and dK = dSᵀ Q / √d_k. (Kᵀ in the
  // forward is why K's gradient takes dS transposed.)
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.n_heads; ++h) {
      const auto dS_bh = head_rows(dS, a, b, h);
      auto dQ = head_block(dQKV, a, 0, b, h);
      auto dK = head_block(dQKV, a, 1, b, h);
      dQ.noalias() = dS_bh * head_block(QKV, a, 1, b, h);
      dK.noalias() = dS_bh.transpose() * head_block(QKV, a, 0, b, h);
      dQ /= sqrt_dk;
      dK /= sqrt_dk;
    }
}

void cross_entropy_backward(const Matrix& probs, const std::vector<int64_t>& targets, Matrix& dlogits) {
  if (int64_t(targets.size()) != probs.rows())
    throw std::invalid_argument(
        fmt::format("cross_entropy_backward: {} targets for {} rows of probs", targets.size(), probs.rows()));
  detail::expect_shape("cross_entropy_backward", "dlogits", dlogits, probs.rows(), probs.cols());
  int64_t counted = 0;
  for (int64_t t : targets)
    if (t != kIgnore) ++counted;
  if (counted == 0) throw std::invalid_argument("cross_entropy_backward: every target is kIgnore");

  // For one row, loss_i = logsumexp(z) − z_t, and ∂logsumexp/∂z_j = p_j, so
  // ∂loss_i/∂z = p − onehot(t): push the right logit up and every logit
  // down in proportion to its probability. The mean divides by n_counted.
  // Ignored rows never reached the loss: their gradient is exactly 0.
  const float inv_n = 1.0f / float(counted);
  for (int64_t i = 0; i < probs.rows(); ++i) {
    const int64_t t = targets[size_t(i)];
    if (t == kIgnore) {
      dlogits.row(i).setZero();
      continue;
    }
    if (t < 0 || t >= probs.cols())
      throw std::out_of_range(fmt::format("cross_entropy_backward: target {} outside [0, {})", t, probs.cols()));
    dlogits.row(i) = probs.row(i) * inv_n;
    dlogits(i, t) = (probs(i, t) - 1.0f) * inv_n;
  }
}

void adam_step(std::span<float> param, std::span<const float> grad, std::span<float> m, std::span<float> v, int64_t t,
               const AdamConfig& cfg) {
  if (grad.size() != param.size() || m.size() != param.size() || v.size() != param.size())
    throw std::invalid_argument(fmt::format("adam_step: sizes differ (param {}, grad {}, m {}, v {})", param.size(),
                                            grad.size(), m.size(), v.size()));
  if (t < 1) throw std::invalid_argument(fmt::format("adam_step: step number {} (the first step is 1)", t));
  // The scalars in double, as Python computes them, then used as float32,
  // as PyTorch's kernels receive them.
  const float beta1 = float(cfg.beta1), beta2 = float(cfg.beta2);
  const float one_minus_beta1 = float(1.0 - cfg.beta1), one_minus_beta2 = float(1.0 - cfg.beta2);
  const double bias_correction1 = 1.0 - std::pow(cfg.beta1, double(t));
  const double bias_correction2 = 1.0 - std::pow(cfg.beta2, double(t));
  const float step_size = float(cfg.lr / bias_correction1);
  const float bias_correction2_sqrt = float(std::sqrt(bias_correction2));
  const float eps = float(cfg.eps);

  for (size_t i = 0; i < param.size(); ++i) {
    const float g = grad[i];
    m[i] = m[i] * beta1 + one_minus_beta1 * g;       // running mean of g
    v[i] = v[i] * beta2 + one_minus_beta2 * g * g;   // running mean of g²
    const float denom = std::sqrt(v[i]) / bias_correction2_sqrt + eps;
    param[i] += -step_size * m[i] / denom;
  }
}

}  // namespace sa
