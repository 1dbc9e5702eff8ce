// Reference solutions of chapter 9: the learning-rate schedule.
#include "09-gpt/gpt.hpp"

#include <fmt/core.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace sa {

double learning_rate(int64_t it, const LrSchedule& s) {
  if (it < 0) throw std::invalid_argument(fmt::format("learning_rate: iteration {} (the first is 0)", it));
  if (s.warmup_iters < 0 || s.lr_decay_iters <= s.warmup_iters)
    throw std::invalid_argument(fmt::format("learning_rate: warmup_iters {} and lr_decay_iters {}: need 0 <= warmup < "
                                            "decay",
                                            s.warmup_iters, s.lr_decay_iters));
  if (!(s.lr > 0) || !(s.min_lr >= 0) || s.min_lr > s.lr || !std::isfinite(s.lr))
    throw std::invalid_argument(
        fmt::format("learning_rate: lr {} and min_lr {}: need 0 <= min_lr <= lr, lr > 0", s.lr, s.min_lr));
  // Warm-up: (it + 1) / (warmup + 1) climbs from 1/(warmup + 1) at the
  // first iteration to warmup/(warmup + 1) at the last one of the warm-up;
  // the cosine then starts at lr.
  if (it < s.warmup_iters) return s.lr * double(it + 1) / double(s.warmup_iters + 1);
  if (it > s.lr_decay_iters) return s.min_lr;
  const double ratio = double(it - s.warmup_iters) / double(s.lr_decay_iters - s.warmup_iters);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));  // 1 at the start, 0 at the end
  return s.min_lr + coeff * (s.lr - s.min_lr);
}

}  // namespace sa
