// Chapter 6: dropout on attention weights.
//
// Takes the attention weights of "the cat sat on the mat" (rebuilt with
// chapters 1 and 3) through one inverted-dropout draw: the mask, the weights
// before and after, row sums that no longer add up to 1; training against
// evaluation; many draws showing that the kept fraction tends to 1 - p and
// the mean to the original weights; why the mask is element by element and
// not whole rows or columns; the backward pass; and the edges p = 0, p = 1
// and p outside [0, 1].
#include "01-qkv-projection/qkv.hpp"
#include "03-softmax/softmax.hpp"
#include "06-dropout/dropout.hpp"

#include "01-qkv-projection/running_example.hpp"
#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/gradcheck.hpp"
#include "sa/nn.hpp"
#include "sa/plot.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace sa;

namespace {

constexpr int64_t kDModel = 64;  // the running example of chapters 1 to 3
constexpr int64_t kDK = 64;
constexpr int64_t kSweepDraws = 1000;  // draws of the 6 x 6 weights per p in step 5

struct Options {
  double p = 0.1;  // the usual rate on attention weights (GPT-2 and BERT use it)
  int64_t draws = 100000;
};


// 1/(1-p) for printing; p = 1 has no survivors to scale.
std::string scale_text(double p) { return p < 1.0 ? fmt::format("{:.4f}", 1.0 / (1.0 - p)) : "1/0 (no survivors)"; }

Matrix as_matrix(const Mask& keep) { return keep.cast<float>(); }

// n without its trailing zeros: 1 for 1, 10, 100, ...; 2 for 20, 200; 37 for 370.
int64_t strip_zeros(int64_t n) {
  while (n % 10 == 0) n /= 10;
  return n;
}

int64_t count_kept(const Mask& keep) { return keep.cast<int64_t>().sum(); }

// Dropout with a mask chosen by hand instead of drawn. Once its mask is
// fixed, dropout is the linear map x -> x * keep / (1 - p), and that same
// map is what dropout_backward applies to a gradient: we reuse it rather
// than write the formula a second time.
Matrix apply_mask(const Matrix& x, const Mask& keep, double p) { return dropout_backward(x, keep, p); }

// True when `after` is at the same place in its stream as `before` was:
// the call in between drew nothing.
bool drew_nothing(Generator before, Generator after) { return before.random() == after.random(); }

// One point of the convergence experiment (step 4).
struct Checkpoint {
  int64_t n;                  // draws so far
  double kept_fraction;       // over n * seq_len^2 elements
  double max_error, rms_error;  // of the mean of the n dropped-out matrices against the weights
  double predicted_rms;       // sqrt(p / (1 - p) * mean(w^2) / n)
};

struct SweepPoint {
  double p, kept_fraction;
};

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& weights,
                  const Matrix& dropped, const std::vector<Matrix>& patterns,
                  const std::vector<std::string>& pattern_names, const std::vector<SweepPoint>& sweep,
                  const std::vector<Checkpoint>& curve) {
  const double vmax = std::max(double(dropped.maxCoeff()), double(weights.maxCoeff()));
  auto panel = [&](const std::string& title, const Matrix& values) {
    plot::Heatmap h = plot::weights_heatmap(title, values, tokens);
    h.cblabel = "weight";
    h.vmax = vmax;  // survivors are scaled up by 1/(1-p): one scale for every panel, a darker cell is larger
    h.decimals = 3;
    return h;
  };

  figures.draw("before_after.png", [&](const std::string& path) {
    return plot::heatmap_grid(
        path, fmt::format("Attention weights before and after one dropout draw (p = {}, survivors x {})", o.p,
                          scale_text(o.p)),
        1, 2,
        {panel("before (evaluation: dropout is the identity)", weights),
         panel(fmt::format("after (training): {} of {} dropped", weights.size() - (dropped.array() != 0).count(),
                           weights.size()),
               dropped)},
        520);
  });

  figures.draw("drop_patterns.png", [&](const std::string& path) {
    std::vector<plot::Heatmap> panels;
    for (size_t k = 0; k < patterns.size(); ++k) panels.push_back(panel(pattern_names[k], patterns[k]));
    return plot::heatmap_grid(path, "What gets dropped: single weights, a whole query row, a whole key column", 1,
                              int(panels.size()), panels, 460);
  });

  figures.draw("kept_fraction.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("Kept fraction against p ({} draws of the {} x {} weights per p)", kSweepDraws,
                          weights.rows(), weights.cols());
    p.xlabel = "drop probability p";
    p.ylabel = "fraction of weights kept";
    plot::Series theory{"1 - p", {}, {}, plot::Series::Style::Lines};
    plot::Series measured{"measured", {}, {}, plot::Series::Style::Points};
    for (const SweepPoint& s : sweep) {
      theory.x.push_back(s.p);
      theory.y.push_back(1.0 - s.p);
      measured.x.push_back(s.p);
      measured.y.push_back(s.kept_fraction);
    }
    p.series = {theory, measured};
    p.ymin = -0.02;
    p.ymax = 1.02;
    return plot::lines(path, p);
  });

  if (curve.empty()) return;  // p = 0 or 1: nothing random to converge (step 4 says why)
  figures.draw("convergence.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("Mean of n dropped-out weight matrices against the weights (p = {})", o.p);
    p.xlabel = "number of draws n";
    p.ylabel = "error of the mean |mean_n - weights|";
    plot::Series max_err{"largest error over the 36 weights", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series rms_err{"root mean square error", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series theory{"predicted RMS: sqrt(p/(1-p) mean(w^2) / n), slope -1/2", {}, {}, plot::Series::Style::Dashed};
    for (const Checkpoint& c : curve) {
      max_err.x.push_back(double(c.n));
      max_err.y.push_back(c.max_error);
      rms_err.x.push_back(double(c.n));
      rms_err.y.push_back(c.rms_error);
      theory.x.push_back(double(c.n));
      theory.y.push_back(c.predicted_rms);
    }
    p.series = {max_err, rms_err, theory};
    p.logx = true;
    p.logy = true;
    return plot::lines(path, p);
  });
}

void run(int argc, char** argv) {
  Options o;
  Cli cli("06-dropout",
          "Chapter 6: inverted dropout on the attention weights of the running example: the mask, the "
          "scaling by 1/(1-p), training against evaluation, the statistics over many draws, and the backward "
          "pass.");
  cli.add("--p", &o.p, "the drop probability p: each weight is zeroed with probability p", RealRange{0.0, 1.0});
  cli.add("--draws", &o.draws, "dropout draws averaged in step 4", IntRange{1, 1'000'000});
  cli.parse(argc, argv);
  // The run against the budget: --draws masks of the 6 x 6 weights; a
  // million take 0.4 s of CPU (one core).
  cli.check_budget({0.3 + 1e-6 * double(o.draws), 64e6, fmt::format("--draws {}", o.draws)});

  const auto tokens = tokenize("the cat sat on the mat");
  const int64_t seq_len = int64_t(tokens.size());
  const std::string scale = scale_text(o.p);
  Figures figures(cli);

  chapter_title("Chapter 6: dropout on attention weights");
  fmt::print("text \"the cat sat on the mat\", d_model {}, d_k {}, p {}, seed {}, draws {}\n", kDModel, kDK, o.p,
             cli.seed, o.draws);

  // ---------------------------------------------------------------------
  step(1, "The attention weights of the running example");
  say("Rebuilt as in chapter 3, from the same seed and in the same order: embeddings plus positional encoding, "
      "the three projections, then attention(Q, K, V). Dropout acts on the weights, between the softmax and the "
      "product with V.");
  Generator gen(cli.seed);
  const RunningExample example = make_running_example(gen, tokens, kDModel, kDK);
  const QKV& qkv = example.qkv;
  const Attention att = attention(qkv.Q, qkv.K, qkv.V);
  const Matrix& weights = att.weights;
  print_shape("Q, K, V", {1, seq_len, kDK});
  print_shape("weights = softmax(Q K^T / sqrt(d_k))", {1, seq_len, seq_len}, "(batch, seq_q, seq_k)");
  print_labelled("weights[0]", weights, tokens, tokens);
  fmt::print("  row sums  {}\n", format_row(Matrix(weights.rowwise().sum().transpose()), 0, 4));

  // ---------------------------------------------------------------------
  step(2, fmt::format("One dropout draw in training, p = {}", o.p));
  say(fmt::format("Every weight is kept or dropped on its own: kept with probability 1 - p = {:g}, set to 0 with "
                  "probability p = {}. {} Scaling during training, not at evaluation, is what makes it "
                  "\"inverted\" dropout.",
                  1.0 - o.p, o.p,
                  o.p < 1.0 ? fmt::format("The survivors are multiplied by 1/(1-p) = {}, so that on average a "
                                          "weight is unchanged: (1-p) * w/(1-p) + p * 0 = w.",
                                          scale)
                            : std::string("With p = 1 there are no survivors to scale (1/(1-p) would be 1/0), "
                                          "and the average of a weight is 0, not w.")));
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

  // ---------------------------------------------------------------------
  step(3, "Training against evaluation");
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

  // ---------------------------------------------------------------------
  step(4, "Many draws: the kept fraction tends to 1 - p, the mean to the weights");
  std::vector<Checkpoint> curve;  // for the figure: 1, 2, 5 x 10^k and the last draw
  std::vector<Checkpoint> table_rows;  // for the table: powers of 10 and the last draw
  const double mean_w2 = weights.cast<double>().array().square().mean();
  // Steps 4 and 5 draw from a generator of their own (step 5 continues its
  // stream), so that --draws changes nothing in the other steps.
  Generator many(cli.seed);
  double worst_sigmas = 0.0;  // largest |kept fraction - (1-p)| in binomial standard deviations
  {
    Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(seq_len, seq_len);
    int64_t kept_total = 0;
    const Eigen::MatrixXd w = weights.cast<double>();
    for (int64_t n = 1; n <= o.draws; ++n) {
      const DropoutResult r = dropout(weights, o.p, many);
      sum += r.output.cast<double>();
      kept_total += count_kept(r.keep);
      const int64_t lead = strip_zeros(n);
      const bool power_of_ten = lead == 1;
      const bool plotted = lead == 1 || lead == 2 || lead == 5;  // evenly spaced on a log axis
      if (!plotted && n != o.draws) continue;
      const Eigen::MatrixXd error = sum / double(n) - w;
      Checkpoint c{n, double(kept_total) / double(n * weights.size()), error.cwiseAbs().maxCoeff(),
                   std::sqrt(error.array().square().mean()), std::sqrt(o.p / (1.0 - o.p) * mean_w2 / double(n))};
      if (plotted || n == o.draws) curve.push_back(c);
      if ((power_of_ten && n >= 10) || n == o.draws) table_rows.push_back(c);
    }
  }
  say(fmt::format("Each draw drops a fresh random set of the {} weights. After n draws we compare the fraction "
                  "kept with 1 - p, and the mean of the n dropped-out matrices with the weights themselves. One "
                  "weight's dropout is w/(1-p) or 0, with variance w^2 p/(1-p); the mean of n draws therefore "
                  "misses by about sqrt(p/(1-p) mean(w^2) / n): ten times the draws, sqrt(10) = 3.2 times smaller "
                  "error.",
                  weights.size()));
  fmt::print("  {:>8}  {:>13}  {:>12}  {:>13}  {:>13}  {:>13}\n", "draws n", "kept fraction", "binomial sd",
             "largest error", "RMS error", "predicted RMS");
  for (const Checkpoint& c : table_rows) {
    const double sd = std::sqrt(o.p * (1.0 - o.p) / double(c.n * weights.size()));
    if (sd > 0) worst_sigmas = std::max(worst_sigmas, std::abs(c.kept_fraction - (1.0 - o.p)) / sd);
    fmt::print("  {:>8}  {:>13.5f}  {:>12.5f}  {:>13.6f}  {:>13.6f}  {:>13}\n", c.n, c.kept_fraction, sd,
               c.max_error, c.rms_error, o.p < 1.0 ? fmt::format("{:.6f}", c.predicted_rms) : "-");
  }
  fmt::print("  1 - p = {:g}\n", 1.0 - o.p);
  if (o.p == 0.0 || o.p == 1.0) {
    say(o.p == 0.0 ? "With p = 0 nothing is ever dropped and nothing is random: every draw is the weights "
                     "themselves, so the error is 0 from the first draw (no convergence figure)."
                   : "With p = 1 everything is dropped every time: the mean stays 0, the error stays at the weights "
                     "themselves, and E[dropout(w)] = w fails. Inverted dropout's promise needs p < 1 (no "
                     "convergence figure).");
    curve.clear();
  } else {
    // Does the measured RMS error follow the prediction? Within a factor of
    // 2 in every row, is what "follows" means here; the first draws of a p
    // near 1 keep almost nothing, and their error is far from its average.
    double lowest = INFINITY, highest = 0;
    for (const Checkpoint& c : table_rows) {
      lowest = std::min(lowest, c.rms_error / c.predicted_rms);
      highest = std::max(highest, c.rms_error / c.predicted_rms);
    }
    const bool follows = lowest >= 0.5 && highest <= 2.0;
    std::string error_sentence;
    if (table_rows.size() < 2)
      error_sentence = fmt::format("with a single row there is no trend to see yet (its RMS error is {:.2f} times "
                                   "the predicted one; more --draws show it fall)",
                                   lowest);
    else if (follows)
      error_sentence = fmt::format("the error of the mean follows the predicted 1/sqrt(n) law (measured RMS "
                                   "between {:.2f} and {:.2f} times the prediction)",
                                   lowest, highest);
    else
      error_sentence = fmt::format("the error of the mean does not follow the predicted 1/sqrt(n) law in "
                                   "every row (measured RMS between {:.2f} and {:.2f} times the prediction): a "
                                   "weight survives once in 1/(1-p) = {:.4g} draws on average, and the law holds only "
                                   "once every weight has survived many times",
                                   lowest, highest, 1.0 / (1.0 - o.p));
    say(fmt::format("The kept fraction stays within {:.1f} binomial standard deviations sqrt(p(1-p) / (36 n)) "
                    "of 1 - p in every row of the table, and {}. Dropout is noise with mean zero around the "
                    "weights.",
                    worst_sigmas, error_sentence));
  }

  // ---------------------------------------------------------------------
  step(5, "The kept fraction against p");
  std::vector<SweepPoint> sweep;
  {
    fmt::print("  {:>5}  {:>8}  {:>13}  {:>10}\n", "p", "1 - p", "kept fraction", "difference");
    for (int k = 0; k <= 10; ++k) {
      const double p = k / 10.0;
      int64_t kept_sum = 0;
      for (int64_t d = 0; d < kSweepDraws; ++d) kept_sum += count_kept(dropout(weights, p, many).keep);
      const double fraction = double(kept_sum) / double(kSweepDraws * weights.size());
      sweep.push_back({p, fraction});
      fmt::print("  {:>5.1f}  {:>8.1f}  {:>13.5f}  {:>+10.5f}\n", p, 1.0 - p, fraction, fraction - (1.0 - p));
    }
  }
  say(fmt::format("{} draws of {} weights per p: {} Bernoulli trials, so the measured fraction has a standard "
                  "deviation of at most sqrt(0.25 / {}) = {:.4f}. The two ends are exact: p = 0 keeps everything, "
                  "p = 1 keeps nothing.",
                  kSweepDraws, weights.size(), kSweepDraws * weights.size(), kSweepDraws * weights.size(),
                  std::sqrt(0.25 / double(kSweepDraws * weights.size()))));

  // ---------------------------------------------------------------------
  step(6, "Why single weights, not whole rows or columns");
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
                  : o.p <= 0.5
                      ? " That is the point: the model learns not to lean on any single connection, while every "
                        "token still sees most of its context."
                      : fmt::format(" At p = {} a token keeps only {:.0f}% of its connections on average: the "
                                    "small p of practice (0.1) is what keeps most of the context.",
                                    o.p, 100.0 * (1.0 - o.p))));

  // ---------------------------------------------------------------------
  step(7, "The backward pass: the same mask, the same scale");
  say("With the mask fixed, dropout multiplies each weight by its own factor m_ij = keep_ij / (1-p). The Jacobian "
      "is diagonal, so the gradient takes the same path back: dL/dw_ij = dL/dy_ij * m_ij. A dropped weight gets "
      "no gradient in this step; a kept one gets the incoming gradient times 1/(1-p). Nothing new is drawn: the "
      "forward must keep its mask for the backward.");
  // An upstream gradient dL/d(output), as some loss would send back; drawn
  // on the main generator right after step 2's dropout, like torch.randn(1, 6, 64) would be.
  const Matrix G = gen.randn(seq_len, kDK);
  const Matrix d_dropped = G * qkv.V.transpose();  // output = dropped V  =>  dL/d(dropped) = G V^T
  const Matrix d_weights = dropout_backward(d_dropped, drop.keep, o.p);
  print_shape("dL/d(output) = G", {1, seq_len, kDK}, "drawn from N(0, 1) for the demonstration");
  print_labelled("dL/d(dropout(weights)) = G V^T", d_dropped, tokens, tokens);
  print_labelled("dL/d(weights) = dropout_backward(G V^T, keep, p)", d_weights, tokens, tokens);
  {
    int64_t zero_where_dropped = 0, scaled_where_kept = 0;
    const float s = o.p < 1.0 ? 1.0f / float(1.0 - o.p) : 0.0f;
    for (int64_t i = 0; i < seq_len; ++i)
      for (int64_t j = 0; j < seq_len; ++j) {
        if (!drop.keep(i, j)) zero_where_dropped += d_weights(i, j) == 0.0f;
        if (drop.keep(i, j)) scaled_where_kept += d_weights(i, j) == d_dropped(i, j) * s;
      }
    fmt::print("  exactly 0 where dropped: {}/{};  exactly {} x incoming where kept: {}/{}\n", zero_where_dropped,
               weights.size() - kept, scale, scaled_where_kept, kept);
  }
  // Finite differences: L(w) = sum(G * (dropout(w) V)), the same mask replayed
  // by copying the generator as it was before step 2's draw.
  auto loss = [&](const Matrix& w) {
    Generator replay = before_draw;
    // In double from here on, so that float rounding of the product does
    // not drown the small difference the step h makes.
    const Eigen::MatrixXd y = dropout(w, o.p, replay).output.cast<double>() * qkv.V.cast<double>();
    return y.cwiseProduct(G.cast<double>()).sum();
  };
  std::vector<std::pair<int64_t, int64_t>> probes;
  for (bool want_kept : {true, false})
    for (int64_t k = 0; k < weights.size(); ++k)
      if (drop.keep(k / seq_len, k % seq_len) == want_kept) {
        probes.emplace_back(k / seq_len, k % seq_len);
        break;
      }
  const float h = 1e-3f;
  for (const auto& [i, j] : probes) {
    Matrix moved = weights;
    const double numeric = central_difference(moved(i, j), h, [&] { return loss(moved); });
    fmt::print("  weight [{}, {}] (query '{}', key '{}', {}): backward {:.5f}, finite differences {:.5f}\n", i, j,
               tokens[size_t(i)], tokens[size_t(j)], drop.keep(i, j) ? "kept" : "dropped", d_weights(i, j), numeric);
  }
  say("Finite differences replay the same mask by copying the generator as it was before the draw: with a fresh "
      "mask on each side the difference would measure the noise, not the gradient.");

  // ---------------------------------------------------------------------
  step(8, "The edges: p = 0, p = 1, and p outside [0, 1]");
  {
    Generator g0(cli.seed);
    const Generator g0_before = g0;
    const DropoutResult r0 = dropout(weights, 0.0, g0);
    fmt::print("  p = 0: output identical to the weights bit for bit: {}; kept {}/{}; random numbers drawn: {}\n",
               r0.output == weights ? "yes" : "no", count_kept(r0.keep), weights.size(),
               drew_nothing(g0_before, g0) ? "none" : "some");
    Generator g1(cli.seed);
    const Generator g1_before = g1;
    const DropoutResult r1 = dropout(weights, 1.0, g1);
    fmt::print("  p = 1: all zeros: {}; NaN or inf entries: {}; kept {}/{}; random numbers drawn: {}\n",
               r1.output.isZero(0.0f) ? "yes" : "no", r1.output.size() - r1.output.array().isFinite().count(),
               count_kept(r1.keep), weights.size(), drew_nothing(g1_before, g1) ? "none" : "some");
    say("At p = 1 the scale 1/(1-p) would be 1/0 = inf, and a dropped weight would be 0 * inf = NaN; dropout "
        "returns zeros without ever forming the scale. Neither end draws random numbers, as in PyTorch, so the "
        "generator's stream is the same as in Python afterwards.");
    for (double bad : {1.5, -0.1}) {
      try {
        Generator g(cli.seed);
        (void)dropout(weights, bad, g);
        fmt::print("  p = {:g}: accepted (wrong!)\n", bad);
      } catch (const std::invalid_argument& e) {
        fmt::print("  p = {:g}: refused: {}\n", bad, e.what());
      }
    }
    say("On the command line the same rule holds: --p 1.5 prints one line and exits with status 2.");
  }

  gap();
  fmt::print("Drawing figures\n");
  const std::vector<Matrix> patterns{dropped, row_dropped, col_dropped};
  const std::vector<std::string> pattern_names{
      fmt::format("element-wise (this draw, {} dropped)", weights.size() - kept),
      fmt::format("whole query row '{}'", tokens[size_t(query)]),
      fmt::format("whole key column '{}'", tokens[size_t(key)])};
  draw_figures(figures, o, tokens, weights, dropped, patterns, pattern_names, sweep, curve);
  figures.summary();
  fmt::print("Next: chapter 7 trains a tiny transformer, every backward pass by hand. Its corpus models train\n"
             "with this chapter's dropout (p = 0.1) on the attention weights and are evaluated with it off.\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("06-dropout", [&] { run(argc, argv); });
}
