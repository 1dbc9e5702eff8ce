// Chapter 2, steps 1 to 3: chapter 1's Q and K rebuilt, the raw scores
// Q K^T, and the scaled scores Q K^T / sqrt(d_k).
#include "02-scaling/steps.hpp"

#include "01-qkv-projection/running_example.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>

namespace sa::ch2 {

Spread spread(const Matrix& m) {
  const double mean = m.cast<double>().mean();
  const double var = (m.cast<double>().array() - mean).square().sum() / double(m.size());
  return {mean, std::sqrt(var)};
}

ExampleQK rebuild_q_and_k(uint64_t seed, const Options& o, const std::vector<std::string>& tokens) {
  const PrintOptions wide{.max_cols = 8};
  // The same calls in the same order as chapter 1, so the same seed gives
  // the same numbers: table, then W_q, W_k, W_v.
  Generator gen(seed);
  const RunningExample example = make_running_example(gen, tokens, o.d_model, o.d_k);
  const int64_t seq_len = example.text.seq_len();
  const QKV& qkv = example.qkv;
  fmt::print("  tokens  {}\n", tokens);
  print_shape("X = embedding + positional encoding", {1, seq_len, o.d_model});
  print_tensor("Q", qkv.Q, {1, seq_len, o.d_k}, wide);
  print_tensor("K", qkv.K, {1, seq_len, o.d_k}, wide);
  const Spread q_spread = spread(qkv.Q), k_spread = spread(qkv.K);
  fmt::print("  entries of Q: mean {:+.3f}, std {:.3f};  entries of K: mean {:+.3f}, std {:.3f}\n", q_spread.mean,
             q_spread.std, k_spread.mean, k_spread.std);
  return {tokens, seq_len, qkv, q_spread, k_spread};
}

Matrix show_raw_scores(const Options& o, const ExampleQK& ex) {
  const auto& [tokens, seq_len, qkv, q_spread, k_spread] = ex;
  const Matrix raw = qkv.Q * qkv.K.transpose();
  say(fmt::format("scores[i, j] = q_i . k_j = sum over {} of q_i[d] * k_j[d].  "
                  "Q (1, {}, {}) times K^T (1, {}, {}) gives (1, {}, {}).",
                  count_of(o.d_k, "dimension"), seq_len, o.d_k, o.d_k, seq_len, seq_len, seq_len));
  print_shape("scores = Q K^T", {1, seq_len, seq_len}, "(batch, queries, keys)");
  print_labelled("scores[0]", raw, tokens, tokens, {.precision = 3});
  const Spread raw_spread = spread(raw);
  fmt::print("  entries: std {:.3f}, largest |score| {:.3f}\n", raw_spread.std, raw.cwiseAbs().maxCoeff());
  return raw;
}

Matrix show_scaled_scores(const Options& o, const ExampleQK& ex, const Matrix& raw) {
  const auto& [tokens, seq_len, qkv, q_spread, k_spread] = ex;
  const Matrix scaled = scaled_scores(qkv.Q, qkv.K);
  const double sqrt_d_k = std::sqrt(double(o.d_k));
  // With d_k 1 the division changes nothing: say so rather than "smaller".
  say(fmt::format("scaled = Q K^T / sqrt(d_k) = Q K^T / sqrt({}) = Q K^T / {:.4g}. Same shape, same "
                  "order of the entries in every row, {}.",
                  o.d_k, sqrt_d_k,
                  o.d_k == 1 ? "the same numbers, as sqrt(1) = 1 (a larger --d-k shrinks them)"
                             : "smaller numbers"));
  print_shape("scaled = Q K^T / sqrt(d_k)", {1, seq_len, seq_len}, "(batch, queries, keys)");
  print_labelled("scaled[0]", scaled, tokens, tokens, {.precision = 3});
  const Spread scaled_spread = spread(scaled);
  fmt::print("  entries: std {:.3f}, largest |score| {:.3f}  (raw / scaled = {:.4f} everywhere: largest "
             "deviation {})\n",
             scaled_spread.std, scaled.cwiseAbs().maxCoeff(), sqrt_d_k,
             rounding((raw - scaled * float(sqrt_d_k)).cwiseAbs().maxCoeff(),
                      rounding_bound(raw.cwiseAbs().maxCoeff())));
  if (raw.size() < 2)
    say("With a single token there is a single score, and one number has no spread: its std is 0 whatever the "
        "scaling. A text of two or more words shows the scores spread out.");
  else {
    // The estimate is a rough one; when it misses by more than twice, say
    // so, and why when the entries' means are what it left out.
    const double estimate = q_spread.std * k_spread.std;
    const double ratio = estimate > 0 ? scaled_spread.std / estimate : 0.0;
    const bool off_centre = std::abs(q_spread.mean) > 0.5 * q_spread.std || std::abs(k_spread.mean) > 0.5 * k_spread.std;
    std::string miss;
    if (estimate > 0 && (ratio > 2.0 || ratio < 0.5))
      miss = fmt::format(
          " Here the spread is {:.1f} times that estimate: {}.", ratio,
          off_centre ? fmt::format("the entries are far from centred (means {:+.3f} and {:+.3f} against stds {:.3f} "
                                   "and {:.3f}), and the argument leaves the means out",
                                   q_spread.mean, k_spread.mean, q_spread.std, k_spread.std)
                     : std::string("too few, too dependent entries for the argument"));
    // Two decimals, or two significant digits below 0.1 (0.0031, not 0.00).
    const auto num = [](double v) { return v >= 0.1 ? fmt::format("{:.2f}", v) : fmt::format("{:.2g}", v); };
    say(fmt::format(
      "Why is the scaled spread {} and not 1? The argument below assumes query and key entries with "
      "variance 1. Here they come from nn.Linear's small initial weights, with std {} and {}, so "
      "the scaled scores can only be expected to spread by about {} x {} = {}; with {} scores "
      "from entries that are neither independent nor centred, 'about' is all the argument promises. "
      "Dividing by sqrt(d_k) removes the growth with d_k, not the scale of the entries themselves (training "
      "sets that).{}",
      num(scaled_spread.std), num(q_spread.std), num(k_spread.std), num(q_spread.std), num(k_spread.std),
      num(estimate), raw.size(), miss));
  }
  return scaled;
}

}  // namespace sa::ch2
