// Reference solutions of chapter 7: the four backward passes (and the
// optimizer step) that are the chapter's exercises. Their forwards, and the
// other layers, are declared in chapters/07-training/training.hpp and
// defined in layers.cpp beside it.
#include "07-training/training.hpp"

#include "03-softmax/softmax.hpp"
#include "06-dropout/dropout.hpp"
#include "07-training/attention_lanes.hpp"

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
  const int64_t T = a.seq, d_k = a.d_k, d = a.d_model, X = QKV.cols();
  const float sqrt_dk = std::sqrt(float(d_k));
  // The formulas run on every sequence at once, in lanes (see
  // attention_lanes.hpp): row i * 3d + col of qkv holds entry (i, col) of every
  // sequence's QKV (dO's and dQKV's likewise), and row (h T + i) T + j of
  // P's lanes weight (i, j) of head h; lane_rows gathers the terms of a sum.
  AttentionLanes& lanes = attention_lanes();
  to_lanes(QKV, a.batch, lanes.QKV);
  to_lanes(dO, a.batch, lanes.dO);
  to_lanes(P, a.batch, lanes.P);
  if (dropped) {
    to_lanes(dropout->P_drop, a.batch, lanes.W);
    to_lanes(dropout->keep, a.batch, lanes.keep);
  }
  const Matrix &qkv = lanes.QKV, &dO_lanes = lanes.dO, &P_lanes = lanes.P;
  const Matrix& W_lanes = dropped ? lanes.W : lanes.P;  // what multiplied V
  Matrix &dqkv = lanes.dQKV, &dS = lanes.dS, &row_dot = lanes.row_a;
  dqkv.resize(T * X, a.batch);  // every row is written below
  dS.resize(T * T, a.batch);
  row_dot.resize(1, a.batch);
  Eigen::Map<Matrix> dW(dP.data(), T * T, a.batch);  // dP is the work buffer for dL/dW of one head
  // With dropout, O = P_drop V and P_drop = P ∘ keep / (1 − p) (chapter 6).
  const float survivor_scale = dropped ? 1.0f / float(1.0 - dropout->p) : 1.0f;
  std::vector<char> used(size_t(T * T));

  for (int64_t h = 0; h < a.n_heads; ++h) {
    const int64_t q = h * d_k, k = d + h * d_k, v = 2 * d + h * d_k;  // head h's columns in QKV
    // Row (h T + i) T + j of the weights' lanes is weight (i, j) of head h.
    const int64_t w = h * T * T;
    // A weight that is 0 in every sequence (a masked one) passes nothing
    // back: each sum below runs over the span of entries that are not.
    for (int64_t ij = 0; ij < T * T; ++ij) used[size_t(ij)] = P_lanes.row(w + ij).cwiseAbs().maxCoeff() > 0;
    std::vector<KeySpan> keys_of(size_t(T), KeySpan{T, -1}), queries_of(size_t(T), KeySpan{T, -1});
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j)
        if (used[size_t(i * T + j)]) {
          keys_of[size_t(i)] = {std::min(keys_of[size_t(i)].first, j), j};
          queries_of[size_t(j)] = {std::min(queries_of[size_t(j)].first, i), i};
        }

    // O = W V with W = P, or P_drop in training with dropout: a matrix
    // product, so dV = Wᵀ dO and dW = dO Vᵀ (chapter-1 rules for Y = X W,
    // with W in the role of X):
    //   dW_ij = Σ_c dO_ic V_jc,   dV_jc = Σ_i W_ij dO_ic.
    // With dropout, chapter 6's backward turns dW = dL/dP_drop into dL/dP:
    //   dP_ij = dW_ij / (1 − p) where the weight was kept, 0 where dropped.
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        if (!used[size_t(i * T + j)]) continue;
        auto dW_ij = dW.row(i * T + j);
        dW_ij = (lane_rows(dO_lanes, i * d + q, d_k).array() * lane_rows(qkv, j * X + v, d_k).array()).colwise().sum();
        if (dropped) dW_ij = (lanes.keep.row(w + i * T + j).array() != 0).select(dW_ij * survivor_scale, 0.0f);
      }
    for (int64_t j = 0; j < T; ++j) {
      const KeySpan queries = queries_of[size_t(j)];
      if (queries.count() == 0) {  // a key no query used: no gradient reaches its K and V
        dqkv.middleRows(j * X + k, d_k).setZero();
        dqkv.middleRows(j * X + v, d_k).setZero();
        continue;
      }
      const auto W_j = lane_rows(W_lanes, w + queries.first * T + j, queries.count(), T);  // W_ij over the span
      for (int64_t c = 0; c < d_k; ++c)
        dqkv.row(j * X + v + c) =
            (W_j.array() * lane_rows(dO_lanes, queries.first * d + q + c, queries.count(), d).array()).colwise().sum();
    }
    const auto& dP_h = dW;  // from here on dL/dP

    // P = softmax(S), row by row: chapter 3's vector-Jacobian product
    //   dS_ij = P_ij (dP_ij − Σ_j' P_ij' dP_ij')
    // for every query. It takes P, the weights before dropout. An unused
    // entry gets dS = 0 (its dP was never written).
    for (int64_t i = 0; i < T; ++i) {
      row_dot.setZero();
      for (int64_t j = 0; j < T; ++j)
        if (used[size_t(i * T + j)]) row_dot += P_lanes.row(w + i * T + j).cwiseProduct(dP_h.row(i * T + j));
      for (int64_t j = 0; j < T; ++j) {
        auto dS_ij = dS.row(i * T + j);
        if (used[size_t(i * T + j)])
          dS_ij = P_lanes.row(w + i * T + j).cwiseProduct(dP_h.row(i * T + j) - row_dot);
        else
          dS_ij.setZero();
      }
    }
    // S = Q Kᵀ / √d_k: dQ = dS K / √d_k and dK = dSᵀ Q / √d_k, that is
    //   dQ_ic = Σ_j dS_ij K_jc / √d_k,   dK_jc = Σ_i dS_ij Q_ic / √d_k.
    // (Kᵀ in the forward is why K's gradient sums over the queries i.)
    for (int64_t i = 0; i < T; ++i) {
      const KeySpan keys = keys_of[size_t(i)];
      if (keys.count() == 0) {  // a query that used no key: no gradient reaches its Q
        dqkv.middleRows(i * X + q, d_k).setZero();
        continue;
      }
      const auto dS_i = lane_rows(dS, i * T + keys.first, keys.count());  // dS_ij over the span
      for (int64_t c = 0; c < d_k; ++c)
        dqkv.row(i * X + q + c) =
            (dS_i.array() * lane_rows(qkv, keys.first * X + k + c, keys.count(), X).array()).colwise().sum() /
            sqrt_dk;
    }
    for (int64_t j = 0; j < T; ++j) {
      const KeySpan queries = queries_of[size_t(j)];
      if (queries.count() == 0) continue;  // zeroed above
      const auto dS_j = lane_rows(dS, queries.first * T + j, queries.count(), T);  // dS_ij over the span
      for (int64_t c = 0; c < d_k; ++c)
        dqkv.row(j * X + k + c) =
            (dS_j.array() * lane_rows(qkv, queries.first * X + q + c, queries.count(), X).array()).colwise().sum() /
            sqrt_dk;
    }
  }
  from_lanes(dqkv, a.batch, dQKV);
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

  // Element by element, written on whole arrays so that the compiler
  // vectorizes it (a loop calling std::sqrt does not vectorize: sqrt may set
  // errno). Each element's operations and their order are the same.
  using Array = Eigen::Map<Eigen::ArrayXf>;
  Array theta(param.data(), Eigen::Index(param.size())), m_t(m.data(), Eigen::Index(m.size())),
      v_t(v.data(), Eigen::Index(v.size()));
  const Eigen::Map<const Eigen::ArrayXf> g(grad.data(), Eigen::Index(grad.size()));
  m_t = m_t * beta1 + one_minus_beta1 * g;      // running mean of g
  v_t = v_t * beta2 + one_minus_beta2 * g * g;  // running mean of g²
  theta += -step_size * m_t / (v_t.sqrt() / bias_correction2_sqrt + eps);
}

}  // namespace sa
