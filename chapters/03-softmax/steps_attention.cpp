// Chapter 3, steps 1 to 4: the running example's scaled scores through
// softmax to attention weights, weights times values, and all of it in one
// call, attention(Q, K, V).
#include "03-softmax/steps.hpp"

#include "01-qkv-projection/running_example.hpp"
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

ExampleScores scores_of_example(uint64_t seed, const Options& o, const std::vector<std::string>& tokens) {
  const int64_t seq_len = int64_t(tokens.size());
  say("  Rebuilt exactly as in chapter 1 (same seed, same order of draws): tokens, embeddings plus positional "
      "encoding, three projections. Chapter 2 divides the scores by sqrt(d_k).");
  Generator gen(seed);
  const RunningExample example = make_running_example(gen, tokens, o.d_model, o.d_k);
  const QKV& qkv = example.qkv;
  fmt::print("  tokens  {}\n", tokens);
  print_shape("X = E + PE", {1, seq_len, o.d_model});
  print_shape("Q, K, V", {1, seq_len, o.d_k});
  const Matrix scores = scaled_scores(qkv.Q, qkv.K);
  print_shape("scores = Q K^T / sqrt(d_k)", {1, seq_len, seq_len}, "(batch, seq_q, seq_k)");
  print_labelled("scores[0]", scores, tokens, tokens);
  return {tokens, seq_len, qkv, scores};
}

Matrix softmax_of_scores(const ExampleScores& ex) {
  const auto& [tokens, seq_len, qkv, scores] = ex;
  say("  softmax(x)_j = exp(x_j) / sum_k exp(x_k), applied to every row on its own: row i becomes a probability "
      "distribution over the keys that query i can attend to. In PyTorch: softmax(scores, dim=-1).");
  const Matrix weights = softmax_rows(scores);
  print_shape("weights = softmax(scores, dim=-1)", {1, seq_len, seq_len}, "(batch, seq_q, seq_k)");
  print_labelled("weights[0]", weights, tokens, tokens);
  {
    const int64_t r = std::min<int64_t>(1, seq_len - 1);
    const float row_max = scores.row(r).maxCoeff();
    Matrix e(1, seq_len);
    for (int64_t j = 0; j < seq_len; ++j) e(0, j) = std::exp(scores(r, j) - row_max);
    fmt::print("  row '{}' by hand:\n", tokens[size_t(r)]);
    fmt::print("    x               = {}   max {:.4f}\n", format_row(scores, r), row_max);
    fmt::print("    exp(x - max)    = {}   sum {:.4f}\n", format_row(e), e.sum());
    fmt::print("    divided by sum  = {}\n", format_row(Matrix(e / e.sum())));
  }
  std::vector<std::string> sums;
  for (int64_t i = 0; i < seq_len; ++i)
    sums.push_back(fmt::format("{}={:.7f}", tokens[size_t(i)], double(weights.row(i).cast<double>().sum())));
  // Six to a line, so a long --text still reads.
  for (size_t at = 0; at < sums.size(); at += 6)
    fmt::print("  {}  {}\n", at == 0 ? "row sums   " : "           ",
               fmt::join(sums.begin() + long(at), sums.begin() + long(std::min(at + 6, sums.size())), "  "));
  fmt::print("  column sums  {}   (columns are not distributions)\n",
             format_row(Matrix(weights.colwise().sum()), 0, 4));
  if (seq_len == 1)
    say("  With a single key the only weight is 1: softmax has nothing to choose between.");
  else
    say(fmt::format("  Every row sums to 1 up to float32 rounding, every weight is positive. The largest weight "
                    "is {:.4f}, against 1/{} = {:.4f} for a perfectly uniform row and 1 for a one-hot one.",
                    weights.maxCoeff(), seq_len, 1.0 / double(seq_len)));
  return weights;
}

Matrix weights_times_values(const Options& o, const ExampleScores& ex, const Matrix& weights) {
  const auto& [tokens, seq_len, qkv, scores] = ex;
  const PrintOptions wide{.max_cols = 8};
  const Matrix output = weights * qkv.V;
  fmt::print("  weights {} x V {} -> output {}\n", shape_str(Shape{1, seq_len, seq_len}), shape_str(Shape{1, seq_len, o.d_k}),
             shape_str(Shape{1, seq_len, o.d_k}));
  print_tensor("V", qkv.V, {1, seq_len, o.d_k}, wide);
  print_tensor("output = weights V", output, {1, seq_len, o.d_k}, wide);
  {
    const int64_t r = std::min<int64_t>(1, seq_len - 1);
    // Column 0 of the output row, term by term (all of them for a short
    // sentence, three per line).
    const int64_t shown = std::min<int64_t>(seq_len, 9);
    fmt::print("  output['{}'][0] = sum_j weights['{}', j] x V[j][0]\n", tokens[size_t(r)], tokens[size_t(r)]);
    for (int64_t j = 0; j < shown; ++j)
      fmt::print("{}{:.4f} x {:>7.4f}{}", j % 3 == 0 ? "    " : "", weights(r, j), qkv.V(j, 0),
                 j + 1 == shown ? (shown < seq_len ? " + ...\n" : "\n") : (j % 3 == 2 ? " +\n" : " + "));
    fmt::print("    = {:.4f}\n", output(r, 0));
  }
  say("  Each output row is a weighted average of the value rows, the weights being that query's row of "
      "attention: a token's new vector is a mixture of what the tokens it attends to hand over.");
  return output;
}

void attention_in_one_call(const ExampleScores& ex, const Matrix& weights, const Matrix& output) {
  const QKV& qkv = ex.qkv;
  say("  attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, returning the output and the weights (later "
      "chapters draw, mask and measure the weights).");
  const Attention att = attention(qkv.Q, qkv.K, qkv.V);
  print_shape("attention(Q, K, V).output", {1, att.output.rows(), att.output.cols()}, "(batch, seq_q, d_v)");
  print_shape("attention(Q, K, V).weights", {1, att.weights.rows(), att.weights.cols()}, "(batch, seq_q, seq_k)");
  fmt::print("  largest difference from steps 2 and 3: weights {}, output {}\n"
             "  (float32 rounding at most: the same sums, possibly added in another order)\n",
             rounding((att.weights - weights).cwiseAbs().maxCoeff(), 1e-6),
             rounding((att.output - output).cwiseAbs().maxCoeff(), rounding_bound(output.cwiseAbs().maxCoeff())));
}

}  // namespace sa::ch3
