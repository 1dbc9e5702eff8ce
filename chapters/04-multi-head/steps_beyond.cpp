// Chapter 4, steps 13 and 14: the same four layers on other inputs,
// cross-attention of one sequence's queries over another's keys, and a
// batch of sequences.
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

MultiHead cross_attention(Generator& gen, const Input& in) {
  const int64_t d_model = in.d_model, n_heads = in.n_heads, d_k = in.d_k;
  const AttentionParams& params = in.params;
  say(fmt::format("In a translation model the decoder's positions ask the questions and the encoder's positions "
                  "answer them: Q comes from one sequence, K and V from another. Stand-ins here: {} decoder "
                  "states and {} encoder states drawn from N(0, 1) by the same generator, attended with the same "
                  "four layers.",
                  kCrossQueries, kCrossKeys));
  const Matrix X_dec = gen.randn(kCrossQueries, d_model);
  const Matrix X_enc = gen.randn(kCrossKeys, d_model);
  print_shape("X_q  (decoder)", {1, kCrossQueries, d_model});
  print_shape("X_kv (encoder)", {1, kCrossKeys, d_model});
  // Chapter 3's attention, reporting what one head receives: the hook that
  // chapters 5 and 6 use for masks and dropout.
  int64_t calls = 0;
  auto reporting_head = [&](const Matrix& q, const Matrix& k, const Matrix& v, int64_t b) {
    const Attention a = attention(q, k, v);
    if (calls++ == 0)
      fmt::print("  one head of sequence {} receives Q {}, K {}, V {}\n"
                 "  and returns weights {}, output {}\n",
                 b, shape_str(q), shape_str(k), shape_str(v), shape_str(a.weights), shape_str(a.output));
    return a;
  };
  const MultiHead cross = multi_head_attention(X_dec, X_enc, 1, params, n_heads, reporting_head);
  fmt::print("  calls of the head attention: {} (batch 1 x {})\n", calls, count_of(n_heads, "head"));
  const std::vector<std::pair<std::string, Shape>> cross_journey{
      {"Q = X_q W_q + b_q", {1, kCrossQueries, d_model}},
      {"K, V = X_kv W + b", {1, kCrossKeys, d_model}},
      {"Q split into heads", {1, n_heads, kCrossQueries, d_k}},
      {"K, V split into heads", {1, n_heads, kCrossKeys, d_k}},
      {"scores, weights", cross.weights.shape()},
      {"head outputs weights V", {1, n_heads, kCrossQueries, d_k}},
      {"output", {1, cross.output.rows(), cross.output.cols()}},
  };
  for (const auto& [what, shape] : cross_journey) fmt::print("    {:<30} {}\n", what, shape_str(shape));
  print_tensor("cross weights[0, 0]", Matrix(cross.weights.view(0, 0)), {kCrossQueries, kCrossKeys},
               {.precision = 4, .max_rows = 6, .max_cols = 8});
  double cross_worst = 0;
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t i = 0; i < kCrossQueries; ++i)
      cross_worst = std::max(cross_worst, std::abs(cross.weights.view(0, h).row(i).cast<double>().sum() - 1.0));
  fmt::print("  every row sums to 1 over the {} keys: largest |row sum - 1| {}\n", kCrossKeys,
             rounding(cross_worst, 1e-6));
  fmt::print("  {:>6}  {:>8}  {:>8}   (uniform: H = log {} = {:.4f}, focus 1/{} = {:.4f})\n", "head", "mean H", "focus",
             kCrossKeys, std::log(double(kCrossKeys)), kCrossKeys, 1.0 / kCrossKeys);
  for (int64_t h = 0; h < n_heads && h < kMaxPanels; ++h) {
    const HeadStats s = head_stats(cross.weights.view(0, h));
    fmt::print("  {:>6}  {:>8.4f}  {:>8.4f}\n", h, s.mean_entropy, s.focus);
  }
  if (n_heads > kMaxPanels) fmt::print("  ... ({})\n", count_of(n_heads - kMaxPanels, "more head"));
  say(fmt::format("The output has one row per query, ({}, {}), whatever the number of keys: the keys decide where "
                  "the information comes from, the queries how many answers there are. The weights are a "
                  "{} x {} rectangle, not a square.",
                  kCrossQueries, d_model, kCrossQueries, kCrossKeys));
  return cross;
}

void batch_of_sequences(Generator& gen, const Input& in, const Options& o, const MultiHead& mh) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, n_heads = in.n_heads, d_k = in.d_k;
  const Matrix& X = in.X;
  const AttentionParams& params = in.params;
  Matrix X_batch(o.batch * seq_len, d_model);
  X_batch.topRows(seq_len) = X;
  for (int64_t b = 1; b < o.batch; ++b) X_batch.middleRows(b * seq_len, seq_len) = gen.randn(seq_len, d_model);
  say(fmt::format("Sequence 0 is the sentence, {}. The batch is one matrix of batch x seq = {}, so each projection "
                  "is still one product.",
                  o.batch == 1 ? std::string("alone (--batch 1)")
                               : fmt::format("followed by {} of {}", count_of(o.batch - 1, "random N(0, 1) sequence"),
                                             count_of(seq_len, "token")),
                  count_of(o.batch * seq_len, "row")));
  const MultiHead batched = multi_head_attention(X_batch, X_batch, o.batch, params, n_heads);
  print_shape("X", {o.batch, seq_len, d_model}, fmt::format("stored as ({}, {})", X_batch.rows(), X_batch.cols()));
  print_shape("Q, K, V split into heads", {o.batch, n_heads, seq_len, d_k});
  print_shape("weights", batched.weights.shape());
  print_shape("output", {o.batch, seq_len, d_model},
              fmt::format("stored as ({}, {})", batched.output.rows(), batched.output.cols()));
  double seq0 = 0;
  for (int64_t h = 0; h < n_heads; ++h)
    seq0 = std::max(seq0, double((batched.weights.view(0, h) - mh.weights.view(0, h)).cwiseAbs().maxCoeff()));
  fmt::print("  sequence 0 in the batch vs alone (step 9): difference in the weights {}, in the output {}\n",
             rounding(seq0, 1e-6),
             rounding((batched.output.topRows(seq_len) - mh.output).cwiseAbs().maxCoeff(),
                      rounding_bound(mh.output.cwiseAbs().maxCoeff())));
  say("The sequences share the parameters and nothing else: weights are computed inside each (sequence, head) "
      "pair, so no token ever attends to another sequence, and adding sequences to the batch changes no "
      "sequence's result.");
  say("(A difference below the bound is float32 rounding: a product over more rows may be summed in another "
      "order, and on some CPUs the two agree exactly.)");
}

}  // namespace sa::ch4
