// Chapter 6, steps 1 to 3 and 6: the weights of the running example, one
// dropout draw in training, training against evaluation, and why dropout
// drops single weights rather than whole rows or columns.
#include "01-qkv-projection/qkv.hpp"
#include "03-softmax/softmax.hpp"
#include "06-dropout/dropout.hpp"
#include "06-dropout/steps.hpp"

#include "01-qkv-projection/running_example.hpp"
#include "sa/print.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch6 {

namespace {

Matrix as_matrix(const Mask& keep) { return keep.cast<float>(); }

// Dropout with a mask chosen by hand instead of drawn. Once its mask is
// fixed, dropout is the linear map x -> x * keep / (1 - p), and that same
// map is what dropout_backward applies to a gradient: we reuse it rather
// than write the formula a second time.
Matrix apply_mask(const Matrix& x, const Mask& keep, double p) { return dropout_backward(x, keep, p); }

}  // namespace

std::string scale_text(double p) { return p < 1.0 ? fmt::format("{:.4f}", 1.0 / (1.0 - p)) : "1/0 (no survivors)"; }

int64_t count_kept(const Mask& keep) { return keep.cast<int64_t>().sum(); }

Example running_example_weights(Generator& gen) {
  const auto tokens = tokenize("the cat sat on the mat");
  const int64_t seq_len = int64_t(tokens.size());
  say("Rebuilt as in chapter 3, from the same seed and in the same order: embeddings plus positional encoding, "
      "the three projections, then attention(Q, K, V). Dropout acts on the weights, between the softmax and the "
      "product with V.");
  const RunningExample example = make_running_example(gen, tokens, kDModel, kDK);
  const QKV& qkv = example.qkv;
  const Attention att = attention(qkv.Q, qkv.K, qkv.V);
  const Matrix& weights = att.weights;
  print_shape("Q, K, V", {1, seq_len, kDK});
  print_shape("weights = softmax(Q K^T / sqrt(d_k))", {1, seq_len, seq_len}, "(batch, seq_q, seq_k)");
  print_labelled("weights[0]", weights, tokens, tokens);
  fmt::print("  row sums  {}\n", format_row(Matrix(weights.rowwise().sum().transpose()), 0, 4));
  return {tokens, seq_len, qkv, att};
}

Draw one_draw(const Example& ex, const Options& o, Generator& gen) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  const Matrix& weights = ex.att.weights;
  const std::string scale = scale_text(o.p);
  say(fmt::format("Every weight is kept or dropped on its own: kept with probability 1 - p = {:g}, set to 0 with "
                  "probability p = {}. {} Scaling during training, not at evaluation, is what makes it "
                  "\"inverted\" dropout.",
                  1.0 - o.p, o.p,
                  o.p < 1.0 ? fmt::format("The survivors are multiplied by 1/(1-p) = {}, so that on average a "
                                          "weight is unchanged: (1-p) * w/(1-p) + p * 0 = w.",
                                          scale)
                            : std::string("With p = 1 there are no survivors to scale (1/(1-p) would be 1/0), "
                                          "and the average of a weight is 0, not w.")));
  // At p = 0 and p = 1 PyTorch's F.dropout returns x or x * 0 without a
  // draw, and so does dropout() (solutions/06-dropout/dropout.cpp).
  if (o.p == 0.0 || o.p == 1.0)
    say(fmt::format("At p = {} nothing is drawn: PyTorch's F.dropout returns the weights {} without a random number, "
                    "and so does this dropout, so the random numbers after it are the same in both.",
                    o.p, o.p == 0.0 ? "unchanged" : "times 0"));
  else
    say("The draw is PyTorch's: for each element in memory order, one 64-bit random number, whose low 53 bits give "
        "a uniform u in [0, 1); the element is kept when u < 1 - p. With the same seed, F.dropout(weights, p) in "
        "PyTorch drops the same weights.");
  const Generator before_draw = gen;  // to replay this exact mask in step 7
  const DropoutResult drop = dropout(weights, o.p, gen);
  const Matrix& dropped = drop.output;
  const int64_t kept = count_kept(drop.keep);
  print_shape("keep = dropout mask", {1, seq_len, seq_len}, "1 = kept, 0 = dropped");
  print_labelled("keep[0]", as_matrix(drop.keep), tokens, tokens, {.precision = 0});
  fmt::print("  kept {} of {} ({:.1f}%), dropped {}; expected {:.1f} kept on average ({:.0f}%)\n", kept,
             weights.size(), 100.0 * double(kept) / double(weights.size()), weights.size() - kept,
             double(weights.size()) * (1.0 - o.p), 100.0 * (1.0 - o.p));
  print_shape("dropout(weights)", {1, seq_len, seq_len}, "(batch, seq_q, seq_k)");
  print_labelled("dropout(weights)[0]", dropped, tokens, tokens);

  fmt::print("  {:<6}  {:>4}  {:>10}  {:>14}  {:>10}\n", "query", "kept", "sum before", "kept weights", "sum after");
  for (int64_t i = 0; i < seq_len; ++i) {
    double kept_sum = 0.0;
    for (int64_t j = 0; j < seq_len; ++j)
      if (drop.keep(i, j)) kept_sum += weights(i, j);
    fmt::print("  {:<6}  {:>2}/{}  {:>10.4f}  {:>14.4f}  {:>10.4f}\n", tokens[size_t(i)],
               drop.keep.row(i).cast<int>().sum(), seq_len, double(weights.row(i).sum()), kept_sum,
               double(dropped.row(i).sum()));
  }
  if (o.p == 1.0)
    say("With p = 1 every weight is dropped, so every row sums to 0: attention hands every token nothing, and "
        "no scale 1/(1-p) exists. Try a p below 1 to see inverted dropout at work.");
  else if (o.p == 0.0)
    say("With p = 0 nothing is dropped and the scale is 1/(1-0) = 1: the weights pass unchanged and every row "
        "still sums to 1. Try p = 0.1 to see inverted dropout at work.");
  else
  say(fmt::format("sum after = (sum of the kept weights) / (1-p) = (1 - dropped weight) / (1-p). A row that lost "
                  "nothing sums to 1/(1-p) = {}; a row sums to less than 1 exactly when the weights it lost add "
                  "up to more than p = {}. The rows are no longer probability "
                  "distributions, and nothing renormalises them: dividing by the new row sum would undo the drop "
                  "(the other weights would grow to fill the gap) and break E[dropout(w)] = w. Only the average "
                  "over draws is right, and that is all training needs.",
                  scale, o.p));
  return {before_draw, drop, kept};
}

Outputs training_against_evaluation(const Example& ex, const Options& o, const Draw& draw) {
  const int64_t seq_len = ex.seq_len;
  const QKV& qkv = ex.qkv;
  const Attention& att = ex.att;
  const Matrix& dropped = draw.drop.output;
  say("In evaluation (model.eval(), or inference) dropout is the identity: the weights pass unchanged, every row "
      "sums to 1 again, and the output is deterministic. Because the survivors were already scaled up during "
      "training, nothing needs rescaling now. (The original dropout of 2014 did the opposite: no scaling in "
      "training, then every weight multiplied by 1-p at test time.)");
  const Matrix out_eval = att.output;     // weights V
  const Matrix out_train = dropped * qkv.V;  // dropout(weights) V
  print_tensor("eval:  output = weights V", out_eval, {1, seq_len, kDK});
  print_tensor("train: output = dropout(weights) V", out_train, {1, seq_len, kDK});
  fmt::print("  largest |train - eval| over the output: {:.4f}; per query: {}\n",
             (out_train - out_eval).cwiseAbs().maxCoeff(),
             format_row(Matrix((out_train - out_eval).cwiseAbs().rowwise().maxCoeff().transpose()), 0, 4));
  if (o.p == 0.0)
    say("With p = 0 training and evaluation give the same output: nothing was dropped.");
  else if (o.p == 1.0)
    say("With p = 1 training always gives 0, whatever the draw: the average over draws is 0, not the evaluation "
        "output (E[dropout(w)] = w needs p < 1).");
  else
    say("Each training step sees a different noisy version of the output; its average over draws is the "
        "evaluation output, because the output is linear in the weights and E[dropout(weights)] = weights. Step 4 "
        "measures that average.");
  return {out_eval, out_train};
}

CoarseDrops rows_or_columns(const Example& ex, const Options& o, const Outputs& outputs) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  const QKV& qkv = ex.qkv;
  const Matrix& weights = ex.att.weights;
  const Matrix &out_eval = outputs.out_eval, &out_train = outputs.out_train;
  say("Dropout on attention weights drops single (query, key) connections. Compare with two coarser choices at "
      "the same p: dropping a query's whole row, or a key's whole column. The rows and columns below are chosen "
      "by hand to show what each would do when it happens.");
  const int64_t query = std::min<int64_t>(1, seq_len - 1);  // 'cat'
  const int64_t key = std::min<int64_t>(2, seq_len - 1);    // 'sat'
  Mask row_mask = Mask::Constant(seq_len, seq_len, true);
  row_mask.row(query).setConstant(false);
  Mask col_mask = Mask::Constant(seq_len, seq_len, true);
  col_mask.col(key).setConstant(false);
  // With p = 1 every choice is all zeros; show the shapes of the masks with
  // the unscaled weights instead of dividing by zero.
  const double shown_p = o.p < 1.0 ? o.p : 0.0;
  if (o.p == 1.0) say("(With p = 1 everything is dropped anyway; the survivors below are shown unscaled.)");
  const Matrix row_dropped = apply_mask(weights, row_mask, shown_p);
  const Matrix col_dropped = apply_mask(weights, col_mask, shown_p);
  const Matrix out_row = row_dropped * qkv.V;
  const Matrix out_col = col_dropped * qkv.V;
  print_labelled(fmt::format("whole query row '{}' dropped", tokens[size_t(query)]), row_dropped, tokens, tokens);
  print_labelled(fmt::format("whole key column '{}' dropped", tokens[size_t(key)]), col_dropped, tokens, tokens);
  fmt::print("  output = (dropped weights) V, size of each query's output vector ||output[i]||:\n");
  fmt::print("  {:<6}  {:>10}  {:>14}  {:>12}  {:>12}\n", "query", "eval", "element-wise", "row dropped",
             "col dropped");
  for (int64_t i = 0; i < seq_len; ++i)
    fmt::print("  {:<6}  {:>10.4f}  {:>14.4f}  {:>12.4f}  {:>12.4f}\n", tokens[size_t(i)], out_eval.row(i).norm(),
               out_train.row(i).norm(), out_row.row(i).norm(), out_col.row(i).norm());
  say(fmt::format("Dropping the row of '{0}' zeroes its whole output: attention hands '{0}' nothing at all, it "
                  "loses every bit of context for that step. Dropping the column of '{1}' hides '{1}' from every "
                  "query at once, as if the word were missing from the sentence. Element by element, a query "
                  "loses a random p of its connections and keeps the rest; losing all {2} at once has probability "
                  "p^{2} = {3:.1e}.{4}",
                  tokens[size_t(query)], tokens[size_t(key)], seq_len, std::pow(o.p, double(seq_len)),
                  o.p == 0.0 ? " (With p = 0 nothing is lost at all.)"
                  // "Most" needs more than half kept: at p = 0.5 a token keeps half on average.
                  : o.p < 0.5
                      ? " That is the point: the model learns not to lean on any single connection, while every "
                        "token still sees most of its context."
                      // (Three significant digits: at p = 0.999 a token keeps 0.1%, not "0%".)
                      : fmt::format(" At p = {} a token keeps only {:.3g}% of its connections on average: the "
                                    "small p of practice (0.1) is what keeps most of the context.",
                                    o.p, 100.0 * (1.0 - o.p))));
  return {query, key, row_dropped, col_dropped};
}

}  // namespace sa::ch6
