// Reference solutions of chapter 9: sampling the next token.
#include "09-gpt/gpt.hpp"

#include "03-softmax/softmax.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

namespace sa {

RowVector sampling_probs(const RowVector& logits, double temperature, int64_t top_k) {
  const int64_t n = logits.size();
  if (n == 0) throw std::invalid_argument("sampling_probs: the logits are empty");
  if (!(temperature > 0) || !std::isfinite(temperature))
    throw std::invalid_argument(fmt::format("sampling_probs: temperature {} must be above 0 and finite", temperature));
  if (top_k < 1 || top_k > n)
    throw std::invalid_argument(fmt::format("sampling_probs: top_k {} outside [1, {}] (the vocabulary)", top_k, n));
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(logits(i)) || logits(i) == std::numeric_limits<float>::infinity())
      throw std::invalid_argument(fmt::format("sampling_probs: logit {} is {}", i, logits(i)));

  // Divide the logits, as nanoGPT's `logits / temperature` on a float32
  // tensor: the temperature becomes a float first.
  Matrix scaled = logits / float(temperature);
  // The k-th largest: nth_element on a copy, descending.
  std::vector<float> sorted(scaled.data(), scaled.data() + n);
  std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<float>());
  const float kth = sorted[size_t(top_k - 1)];
  for (int64_t i = 0; i < n; ++i)
    if (scaled(0, i) < kth) scaled(0, i) = -std::numeric_limits<float>::infinity();
  // Chapter 3's softmax: the largest logit subtracted first, -inf gets 0.
  return softmax_rows(scaled);
}

int64_t sample_token(const RowVector& probs, Generator& gen) {
  const int64_t n = probs.size();
  if (n == 0) throw std::invalid_argument("sample_token: the probabilities are empty");
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!(probs(i) >= 0) || !std::isfinite(probs(i)))
      throw std::invalid_argument(fmt::format("sample_token: probability {} is {}", i, probs(i)));
    total += probs(i);
  }
  if (total == 0) throw std::invalid_argument("sample_token: the probabilities sum to 0");

  // The exponential race of torch.multinomial(probs, 1): one Exp(1) draw
  // per entry, the largest p / q wins. (PyTorch divides without checking
  // for q = 0, which has probability 2^-53 per draw.)
  int64_t best = 0;
  float best_ratio = -1.0f;
  for (int64_t i = 0; i < n; ++i) {
    const double u = gen.uniform_double();
    const auto q = static_cast<float>(-1.0 * std::log(1.0 - u));
    const float ratio = probs(i) / q;
    if (ratio > best_ratio) {  // strictly: a tie keeps the first, as torch.argmax
      best_ratio = ratio;
      best = i;
    }
  }
  return best;
}

}  // namespace sa
