// Chapter 9 exercises: gradient clipping and AdamW. Write each function,
// then run `./book check 9`. The declarations and what each must do are in
// chapters/09-gpt/gpt.hpp.
#include "09-gpt/gpt.hpp"

#include "07-training/training.hpp"
#include "sa/exercise.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sa {

double clip_grad_norm(const std::vector<std::span<float>>& grads, double max_norm) {
  // TODO: the norm of all the gradients taken together; when it is above
  // max_norm, scale every tensor by one and the same factor. Return the norm
  // before scaling. Refuse what the header lists.
  SA_TODO("clip_grad_norm",
          "one norm over every tensor, not one per tensor "
          "(more: ./book hint 9 clip_grad_norm)");
}

void adamw_step(std::span<float> param, std::span<const float> grad, std::span<float> m, std::span<float> v,
                int64_t t, const AdamWConfig& cfg) {
  // TODO: shrink the weights by the decay, then chapter 7's adam_step with
  // the gradient unchanged.
  SA_TODO("adamw_step",
          "the decay touches the weights, never the gradient "
          "(more: ./book hint 9 adamw_step)");
}

}  // namespace sa
