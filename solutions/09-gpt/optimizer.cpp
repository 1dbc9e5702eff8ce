// Reference solutions of chapter 9: gradient clipping and AdamW.
#include "09-gpt/gpt.hpp"

#include "07-training/training.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace sa {

double clip_grad_norm(const std::vector<std::span<float>>& grads, double max_norm) {
  if (!(max_norm > 0) || !std::isfinite(max_norm))
    throw std::invalid_argument(fmt::format("clip_grad_norm: max_norm {} must be above 0 and finite", max_norm));
  // Each tensor's norm in float32 (torch.norm on a float tensor, which
  // sums its squares in a wider accumulator), then the norm of the norms.
  // The sums here run in double: the same number to float32 precision.
  // std::transform_reduce may add in any order, so the additions need not
  // wait for each other one by one: twice as fast as a plain loop here.
  const auto square = [](float x) { return double(x) * double(x); };
  double total_sq = 0;
  for (const auto& g : grads) {
    const double sq = std::transform_reduce(g.begin(), g.end(), 0.0, std::plus<>(), square);
    const auto norm = float(std::sqrt(sq));
    total_sq += double(norm) * double(norm);
  }
  const auto total = float(std::sqrt(total_sq));
  if (!std::isfinite(total))
    throw std::invalid_argument(fmt::format("clip_grad_norm: the gradients' norm is {}: a gradient holds NaN or inf "
                                            "(training diverged)",
                                            total));
  // One factor for every tensor; 1e-6 keeps the division finite when every
  // gradient is 0. Multiplying by exactly 1 leaves the gradients as they are.
  const float coef = std::min(float(max_norm) / (total + 1e-6f), 1.0f);
  for (const auto& g : grads)
    for (float& x : g) x *= coef;
  return total;
}

void adamw_step(std::span<float> param, std::span<const float> grad, std::span<float> m, std::span<float> v,
                int64_t t, const AdamWConfig& cfg) {
  if (!(cfg.weight_decay >= 0))
    throw std::invalid_argument(fmt::format("adamw_step: weight_decay {} is negative", cfg.weight_decay));
  if (grad.size() != param.size() || m.size() != param.size() || v.size() != param.size())
    throw std::invalid_argument(fmt::format("adamw_step: sizes differ (param {}, grad {}, m {}, v {})", param.size(),
                                            grad.size(), m.size(), v.size()));
  if (t < 1) throw std::invalid_argument(fmt::format("adamw_step: step number {} (the first step is 1)", t));
  // The decay, first and on the weights: θ ← θ (1 − lr λ), the factor in
  // double as Python computes it, then float32 as the kernel receives it.
  const auto shrink = float(1.0 - cfg.lr * cfg.weight_decay);
  for (float& x : param) x *= shrink;
  // Then chapter 7's Adam, with the gradient as it is.
  adam_step(param, grad, m, v, t, AdamConfig{cfg.lr, cfg.beta1, cfg.beta2, cfg.eps});
}

}  // namespace sa
