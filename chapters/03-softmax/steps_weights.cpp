// Chapter 3, steps 9 to 11: what the weights are, read three ways: the wrong
// way to hide keys (zeroing weights after softmax), the entropy and focus
// metrics of later chapters, and attention with the softmax left out.
#include "03-softmax/steps.hpp"

#include "02-scaling/scaling.hpp"
#include "03-softmax/softmax.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch3 {

namespace {

double rms(const Matrix& m) { return std::sqrt(double(m.squaredNorm()) / double(m.size())); }

}  // namespace

void zero_after_softmax(const ExampleScores& ex, const Matrix& weights) {
  const auto& [tokens, seq_len, qkv, scores] = ex;
  say("  Suppose query i must not see the keys after it (chapter 5's causal mask). Setting those weights to 0 "
      "after the softmax looks plausible, but the rows no longer sum to 1:");
  Matrix zeroed = weights;
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = i + 1; j < seq_len; ++j) zeroed(i, j) = 0.0f;
  print_labelled("weights with j > i set to 0 after softmax", zeroed, tokens, tokens);
  std::vector<std::string> broken;
  for (int64_t i = 0; i < seq_len; ++i)
    broken.push_back(fmt::format("{}={:.4f}", tokens[size_t(i)], zeroed.row(i).cast<double>().sum()));
  for (size_t at = 0; at < broken.size(); at += 6)
    fmt::print("  {}  {}\n", at == 0 ? "row sums   " : "           ",
               fmt::join(broken.begin() + long(at), broken.begin() + long(std::min(at + 6, broken.size())), "  "));
  if (seq_len == 1)
    say("  (With a single token nothing comes after it, so nothing is hidden: try a longer --text.)");
  else
    say("  The first query keeps only its own weight, so its output is a shrunken value vector, not an average; "
        "only the last row, which lost nothing, still sums to 1. The right way is to set the scores to -inf "
        "before softmax (step 5 showed that gives exact zeros and rows that still sum to 1): chapter 5.");
}

std::vector<double> entropy_and_focus(const ExampleScores& ex, const Matrix& weights) {
  const auto& [tokens, seq_len, qkv, scores] = ex;
  say("  Entropy of a row, in nats: H = -sum_j a_j log a_j, with 0 log 0 = 0. It is 0 for a one-hot row and "
      "log n for a uniform row over n keys. Focus: the mean over rows of the largest weight, from 1/n (uniform) "
      "to 1 (one-hot). Later chapters compare heads and training with them.");
  const auto entropy = row_entropy(weights);
  const double bound = std::log(double(seq_len));
  fmt::print("\n  {:>8}  {:>9}  {:>9}  {:>12}\n", "query", "H (nats)", "H / log n", "largest a_j");
  for (int64_t i = 0; i < seq_len; ++i)
    fmt::print("  {:>8}  {:>9.4f}  {:>9.4f}  {:>12.4f}\n", tokens[size_t(i)], entropy[size_t(i)],
               bound > 0 ? entropy[size_t(i)] / bound : 0.0, weights.row(i).maxCoeff());
  double mean_h = 0;
  for (double h : entropy) mean_h += h / double(seq_len);
  fmt::print("  mean entropy {:.4f} nats   (uniform bound log {} = {:.4f})\n", mean_h, seq_len, bound);
  fmt::print("  focus        {:.4f}        (uniform bound 1/{} = {:.4f}; one-hot 1)\n", focus(weights), seq_len,
             1.0 / double(seq_len));
  {
    Matrix one_hot = Matrix::Zero(1, seq_len);
    one_hot(0, 0) = 1.0f;
    const Matrix uniform = Matrix::Constant(1, seq_len, 1.0f / float(seq_len));
    fmt::print("  check: a uniform row gives H = {:.4f}, focus {:.4f}; a one-hot row H = {:.4f}, focus {:.4f}\n",
               row_entropy(uniform)[0], focus(uniform), row_entropy(one_hot)[0], focus(one_hot));
  }
  if (seq_len == 1)
    say("  With one key every row is one-hot and uniform at once: entropy 0, focus 1. Chapter 7 trains the "
        "projections and watches both move on longer inputs.");
  else
    say(fmt::format("  Untrained, the mean entropy is {:.0f}% of the uniform bound and the focus {:.1f} times the "
                    "uniform 1/{}. Chapter 7 trains the projections and watches both move.",
                    100 * mean_h / bound, focus(weights) * double(seq_len), seq_len));
  return entropy;
}

// Step 11: attention with the softmax left out, output = (Q K^T / sqrt(d_k)) V,
// against the real one, as the number of keys grows. Random unit-variance
// Q, K, V (d_k 64) and an upstream gradient R of the loss sum(output * R).
void show_without_softmax(uint64_t seed) {
  constexpr int64_t d_k = 64;
  say(fmt::format("What if attention skipped the softmax and used the scaled scores themselves as weights, "
                  "output = (Q K^T / sqrt(d_k)) V? Below, random Q, K, V with unit-variance entries (d_k {}), n "
                  "keys and queries, and the gradient of the loss sum(output * R) for a random R with respect to "
                  "Q. 'rms' is the root mean square of the entries.",
                  d_k));
  Generator gen(seed);
  fmt::print("  {:>5}  {:>14}  {:>14}  {:>14}  {:>14}\n", "n", "rms output", "rms output", "rms dL/dQ",
             "rms dL/dQ");
  fmt::print("  {:>5}  {:>14}  {:>14}  {:>14}  {:>14}\n", "", "softmax", "no softmax", "softmax", "no softmax");
  std::vector<double> ns, with_out, without_out, with_grad, without_grad;
  for (int64_t n : {6, 60, 600}) {
    const Matrix Q = gen.randn(n, d_k), K = gen.randn(n, d_k), V = gen.randn(n, d_k), R = gen.randn(n, d_k);
    const Matrix S = scaled_scores(Q, K);
    const Matrix P = softmax_rows(S);
    const float scale = 1.0f / std::sqrt(float(d_k));
    // d output / d weights = R V^T; through softmax (chapter 3's backward) or
    // straight to the scores; then d scores / d Q = K / sqrt(d_k).
    const Matrix dW = R * V.transpose();
    const Matrix dQ_softmax = softmax_backward(P, dW) * K * scale;
    const Matrix dQ_plain = dW * K * scale;
    ns.push_back(double(n));
    with_out.push_back(rms(P * V));
    without_out.push_back(rms(S * V));
    with_grad.push_back(rms(dQ_softmax));
    without_grad.push_back(rms(dQ_plain));
    fmt::print("  {:>5}  {:>14.4f}  {:>14.4f}  {:>14.4f}  {:>14.4f}\n", n, with_out.back(), without_out.back(),
               with_grad.back(), without_grad.back());
  }
  say(fmt::format("Without softmax, each output is a sum of n terms of size about 1 with nothing dividing it: "
                  "from n = 6 to 600 its rms grows {:.1f} times (sqrt(100) = 10) and the gradient's {:.1f} "
                  "times. With softmax the weights of a row are positive and sum to 1, so the output is an "
                  "average of value rows and stays below the largest of them, whatever n: here {:.2f}, then "
                  "{:.2f}. Nothing explodes in one layer, but the sizes follow the length of the text, weights "
                  "can be negative and no row is a distribution; a stack of such layers multiplies the growth.",
                  without_out.back() / without_out.front(), without_grad.back() / without_grad.front(),
                  with_out.front(), with_out.back()));
}

}  // namespace sa::ch3
