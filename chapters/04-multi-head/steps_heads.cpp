// Chapter 4, steps 4 to 9: attention inside each head (scores, weights,
// outputs), the heads combined and projected with W_o, and the same in one
// call of multi_head_attention.
#include "02-scaling/scaling.hpp"
#include "03-softmax/softmax.hpp"
#include "04-multi-head/multihead.hpp"
#include "04-multi-head/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace sa::ch4 {

Tensor4 scores_per_head(const Input& in, const Heads& heads) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, n_heads = in.n_heads, d_k = in.d_k;
  const std::vector<std::string>& tokens = in.tokens;
  const Tensor4 &Q_h = heads.Q_h, &K_h = heads.K_h;
  Tensor4 scores(1, n_heads, seq_len, seq_len);
  for (int64_t h = 0; h < n_heads; ++h) scores.view(0, h) = scaled_scores(Q_h.view(0, h), K_h.view(0, h));
  print_shape("scores", scores.shape(), "(batch, n_heads, seq_q, seq_k)");
  if (n_heads > 1)
    say(fmt::format("Chapter 2's scaled_scores once per head. Each dot product now has d_k = {} {}, so the "
                    "scale is sqrt({}) = {:.4f}, not sqrt(d_model) = {:.4f}.",
                    d_k, d_k == 1 ? "term" : "terms", d_k, std::sqrt(double(d_k)), std::sqrt(double(d_model))));
  else
    say(fmt::format("Chapter 2's scaled_scores. With one head d_k = d_model = {}, so the scale is sqrt({}) = {:.4f}, "
                    "as in chapter 2.",
                    d_k, d_k, std::sqrt(double(d_k))));
  print_labelled("scores[0, 0]", scores.view(0, 0), tokens, tokens);
  fmt::print("\n  {:>6}  {:>9}  {:>9}  {:>9}\n", "head", "min", "max", "std");
  for (int64_t h = 0; h < n_heads && h < kMaxPanels; ++h) {
    const auto s = scores.view(0, h);
    const double mean = s.cast<double>().mean();
    const double sd = std::sqrt((s.cast<double>().array() - mean).square().mean());
    fmt::print("  {:>6}  {:>9.4f}  {:>9.4f}  {:>9.4f}\n", h, s.minCoeff(), s.maxCoeff(), sd);
  }
  if (n_heads > kMaxPanels) fmt::print("  ... ({})\n", count_of(n_heads - kMaxPanels, "more head"));
  return scores;
}

Tensor4 weights_per_head(const Input& in, const Tensor4& scores) {
  const int64_t seq_len = in.seq_len, n_heads = in.n_heads, d_k = in.d_k;
  const std::vector<std::string>& tokens = in.tokens;
  Tensor4 weights(1, n_heads, seq_len, seq_len);
  double worst_sum = 0;
  for (int64_t h = 0; h < n_heads; ++h) {
    weights.view(0, h) = softmax_rows(scores.view(0, h));
    for (int64_t i = 0; i < seq_len; ++i)
      worst_sum = std::max(worst_sum, std::abs(weights.view(0, h).row(i).cast<double>().sum() - 1.0));
  }
  print_shape("weights", weights.shape(), "(batch, n_heads, seq_q, seq_k)");
  const int64_t printed_heads = std::min<int64_t>(n_heads, 4);
  for (int64_t h = 0; h < printed_heads; ++h)
    print_labelled(fmt::format("weights[0, {}]", h), weights.view(0, h), tokens, tokens);
  if (n_heads > printed_heads) fmt::print("  ... ({})\n", count_of(n_heads - printed_heads, "more head"));
  fmt::print("  every row of every head sums to 1: largest |row sum - 1| {}\n", rounding(worst_sum, 1e-6));
  if (n_heads > 1)
    say(fmt::format("{} separate attention patterns over the same {}, one per head: a pair of tokens now "
                    "gets {} weights instead of one, each decided in its own {}-dimensional subspace.",
                    n_heads, count_of(seq_len, "token"), n_heads, d_k));
  else
    say("One head, one attention pattern: chapter 3's, over all the columns.");
  return weights;
}

Tensor4 outputs_per_head(const Input& in, const Heads& heads, const Tensor4& weights) {
  const int64_t seq_len = in.seq_len, n_heads = in.n_heads, d_k = in.d_k;
  const Tensor4& V_h = heads.V_h;
  const int64_t h1 = example_element(in).h1;
  Tensor4 head_out(1, n_heads, seq_len, d_k);
  for (int64_t h = 0; h < n_heads; ++h) head_out.view(0, h) = weights.view(0, h) * V_h.view(0, h);
  print_shape("head outputs", head_out.shape(), "(batch, n_heads, seq, d_k)");
  print_tensor(fmt::format("head outputs[0, {}]", h1), Matrix(head_out.view(0, h1)), {seq_len, d_k}, wide);
  say(fmt::format("Each head averages its own {}-wide slice of V: row i of head h mixes the value slices of "
                  "the tokens that head h's query i attends to.",
                  d_k));
  return head_out;
}

Matrix combine(const Input& in, const QKV& qkv, const Heads& heads, const Tensor4& head_out) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, d_k = in.d_k;
  const Matrix& Q = qkv.Q;
  const Tensor4& Q_h = heads.Q_h;
  const auto [h1, r2, show, c0] = example_element(in);
  const Matrix combined = combine_heads(head_out);
  print_tensor("combined = combine_heads(head outputs)", combined, {1, seq_len, d_model}, wide);
  values_line(fmt::format("head outputs[0, {}, {}, 0:{}]", h1, r2, show), head_out.view(0, h1).row(r2).data(), show,
              "");
  values_line(fmt::format("combined[0, {}, {}:{}]", r2, c0, c0 + show), &combined(r2, c0), show,
              d_k == 1 ? fmt::format("head {} sits in column {}", h1, c0)
                       : fmt::format("head {} sits in columns {} to {}", h1, c0, c0 + d_k - 1));
  fmt::print("  combine_heads(split_heads(Q)) == Q, bit for bit: {}\n", yes_no(combine_heads(Q_h) == Q));
  say("This is Concat(head_0, ..., head_{n_heads-1}): each token's row holds its head vectors side by side, the exact "
      "inverse of the split (PyTorch: transpose(1, 2), then contiguous().view(batch, seq, d_model)).");
  return combined;
}

Matrix output_projection(const Input& in, const Matrix& combined) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, n_heads = in.n_heads;
  const AttentionParams& params = in.params;
  const Matrix output = linear(combined, params.W_o);
  print_tensor("output = combined W_o + b_o", output, {1, seq_len, d_model}, wide);
  if (n_heads > 1)
    say(fmt::format("Up to here no head has seen another head's numbers. W_o is where they meet: every output "
                    "column is a weighted sum over all {} columns, so all {} heads.",
                    d_model, n_heads));
  else
    say(fmt::format("Every output column is a weighted sum over {} of the one head's output.",
                    d_model == 1 ? std::string("the one column") : fmt::format("all {} columns", d_model)));
  return output;
}

MultiHead in_one_call(const Input& in, const Tensor4& weights, const Matrix& output) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, n_heads = in.n_heads, d_k = in.d_k;
  const Matrix& X = in.X;
  const AttentionParams& params = in.params;
  const MultiHead mh = multi_head_attention(X, X, 1, params, n_heads);
  double weights_diff = 0;
  for (int64_t h = 0; h < n_heads; ++h)
    weights_diff = std::max(weights_diff, double((mh.weights.view(0, h) - weights.view(0, h)).cwiseAbs().maxCoeff()));
  print_shape("multi_head_attention(X, X, 1, params, n_heads).output", {1, seq_len, d_model});
  print_shape("multi_head_attention(X, X, 1, params, n_heads).weights", mh.weights.shape());
  fmt::print("  largest difference from steps 5 and 8: weights {}, output {}\n", rounding(weights_diff, 1e-6),
             rounding((mh.output - output).cwiseAbs().maxCoeff(), rounding_bound(output.cwiseAbs().maxCoeff())));
  fmt::print("\n  The whole journey, batch 1:\n");
  const std::vector<std::pair<std::string, Shape>> journey{
      {"X", {1, seq_len, d_model}},
      {"Q, K, V = X W + b", {1, seq_len, d_model}},
      {"split into heads", {1, n_heads, seq_len, d_k}},
      {fmt::format("scores Q K^T / sqrt({})", d_k), {1, n_heads, seq_len, seq_len}},
      {"weights softmax(scores)", mh.weights.shape()},
      {"head outputs weights V", {1, n_heads, seq_len, d_k}},
      {"combined", {1, seq_len, d_model}},
      {"output = combined W_o + b_o", {1, seq_len, d_model}},
  };
  for (const auto& [what, shape] : journey) fmt::print("    {:<30} {}\n", what, shape_str(shape));
  return mh;
}

}  // namespace sa::ch4
