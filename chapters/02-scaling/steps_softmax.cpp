// Chapter 2, step 6: what unscaled scores do to softmax, a preview of
// chapter 3: the largest weight of a row of random scores as d_k grows, and
// of each row of the running example.
#include "02-scaling/steps.hpp"

#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch2 {

namespace {

// The largest weight of softmax(row), without writing softmax (chapter 3
// does). Softmax gives score s_j the weight exp(s_j) / Σ_i exp(s_i); the
// largest weight belongs to the largest score m, and dividing top and bottom
// by exp(m) gives
//     max weight = 1 / Σ_i exp(s_i − m).
// Every exponent is <= 0, so nothing overflows even for scores in the
// thousands, and the term of the maximum itself is exactly 1: the result
// lies between 1/n (all scores equal) and 1 (one score far above the rest).
std::vector<double> largest_softmax_weights(const Matrix& scores) {
  std::vector<double> largest;
  for (int64_t i = 0; i < scores.rows(); ++i) {
    const double m = scores.row(i).maxCoeff();
    double sum = 0;
    for (int64_t j = 0; j < scores.cols(); ++j) sum += std::exp(double(scores(i, j)) - m);
    largest.push_back(1.0 / sum);
  }
  return largest;
}

}  // namespace

void softmax_preview(uint64_t seed, const Options& o, Measured& m) {
  say(fmt::format(
      "Softmax turns a row of scores into weights exp(s_j) / sum_i exp(s_i). Its largest weight is "
      "1 / sum_i exp(s_i - max s): 1/{} = {:.3f} when {} are equal, 1 when one score stands far "
      "above the rest. For each d_k: one query against {} keys, raw and scaled, then the mean over {} such rows.",
      o.keys, 1.0 / double(o.keys), o.keys == 2 ? std::string("both scores") : fmt::format("all {} scores", o.keys),
      o.keys, kSoftmaxRows));
  Generator softmax_gen(seed);
  fmt::print("\n  {:>5} | {:^22} | {:^22} | {:^22}\n", "", "largest weight", "largest weight",
             "std of the raw scores");
  fmt::print("  {:>5} | {:^22} | {:^22} | {:^22}\n", "", "of one row", fmt::format("mean of {} rows", kSoftmaxRows),
             "of that row");
  fmt::print("  {:>5} | {:>10} {:>11} | {:>10} {:>11} | {:>10} {:>11}\n", "d_k", "raw", "scaled", "raw", "scaled",
             "measured", "sqrt(d_k)");
  fmt::print("  {:-<5}-+-{:-<22}-+-{:-<22}-+-{:-<22}\n", "", "", "", "");
  for (const int64_t d_k : d_k_values(o.max_d_k)) {
    // Row r: query r against its own keys r*keys ... r*keys + keys - 1.
    const Matrix Q_rows = softmax_gen.randn(kSoftmaxRows, d_k);
    const Matrix K_rows = softmax_gen.randn(kSoftmaxRows * o.keys, d_k);
    double raw_sum = 0, scaled_sum = 0, first_raw = 0, first_scaled = 0, first_std = 0;
    for (int64_t r = 0; r < kSoftmaxRows; ++r) {
      const Matrix q = Q_rows.row(r);
      const Matrix K = K_rows.middleRows(r * o.keys, o.keys);
      const Matrix raw_row = q * K.transpose();
      const double raw_w = largest_softmax_weights(raw_row)[0];
      const double scaled_w = largest_softmax_weights(scaled_scores(q, K))[0];
      raw_sum += raw_w;
      scaled_sum += scaled_w;
      if (r == 0) first_raw = raw_w, first_scaled = scaled_w, first_std = spread(raw_row).std;
    }
    const double raw_mean = raw_sum / double(kSoftmaxRows), scaled_mean = scaled_sum / double(kSoftmaxRows);
    m.raw_largest.push_back(raw_mean);
    m.scaled_largest.push_back(scaled_mean);
    fmt::print("  {:>5} | {:>10.4f} {:>11.4f} | {:>10.4f} {:>11.4f} | {:>10.2f} {:>11.2f}\n", d_k, first_raw,
               first_scaled, raw_mean, scaled_mean, first_std, std::sqrt(double(d_k)));
  }
  if (m.d_k.size() < 2) {
    say(fmt::format("Only d_k = {} was measured, so there is no trend to see: --max-d-k 1024 shows how the largest "
                    "weight grows with d_k without scaling. Chapter 3 measures softmax's gradient.",
                    m.d_k.front()));
  } else {
    const double first = m.raw_largest.front(), last = m.raw_largest.back();
    const auto [lo, hi] = std::minmax_element(m.scaled_largest.begin(), m.scaled_largest.end());
    std::string text = fmt::format("Without scaling, the mean largest weight goes from {:.3f} at d_k = {} to {:.3f} "
                                   "at d_k = {}",
                                   first, m.d_k.front(), last, m.d_k.back());
    if (last > 0.95)
      text += ": softmax puts nearly all the weight on one key, and its gradient with respect to the other scores "
              "is close to 0, so they stop learning.";
    else if (last > first)
      text += ": the rows tighten towards one-hot, and softmax's gradient with respect to the other scores "
              "shrinks as they do (larger d_k makes it worse).";
    else
      text += ".";
    text += fmt::format(" With scaling it stays between {:.3f} and {:.3f}. Chapter 3 measures that gradient.",
                        bound_below(*lo, 3), bound_above(*hi, 3));
    say(text);
  }
}

void largest_weights_of_example(const Options& o, const ExampleQK& ex, const Matrix& raw, const Matrix& scaled) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  gap();
  fmt::print("  Back to the running example, row by row (d_k = {}):\n", o.d_k);
  const auto raw_w = largest_softmax_weights(raw), scaled_w = largest_softmax_weights(scaled);
  fmt::print("    {:>8}  {:>12}  {:>12}\n", "query", "raw", "scaled");
  for (int64_t i = 0; i < seq_len; ++i)
    fmt::print("    {:>8}  {:>12.4f}  {:>12.4f}\n", tokens[size_t(i)], raw_w[size_t(i)], scaled_w[size_t(i)]);
  say(fmt::format("(largest softmax weight of each row; uniform would be 1/{} = {:.3f})", seq_len,
                  1.0 / double(seq_len)));
}

}  // namespace sa::ch2
