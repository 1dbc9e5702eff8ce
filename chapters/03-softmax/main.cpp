// Chapter 3: from scores to attention weights, and attention itself.
//
// Takes the scaled scores of "the cat sat on the mat" through softmax to
// attention weights and the attention output; then looks at softmax itself:
// why the row maximum is subtracted, what a temperature does, its Jacobian
// and backward pass, how the gradient vanishes without the 1/sqrt(d_k) of
// chapter 2, the wrong way to mask, and the entropy and focus metrics that
// the later chapters report.
#include "01-qkv-projection/qkv.hpp"
#include "02-scaling/scaling.hpp"
#include "03-softmax/softmax.hpp"

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
#include <string_view>
#include <vector>

using namespace sa;

namespace {

struct Options {
  std::string text = "the cat sat on the mat";
  int64_t d_model = 64;
  int64_t d_k = 64;
  double temperature = 1.0;
  int64_t samples = 2000;
};

// The row the temperature and stability steps play with, and the rows of
// the vanishing-gradient experiment.
const std::vector<float> kTemperatureRow{2.0f, 1.0f, 0.5f, 0.0f, -1.0f, -2.0f};
const std::vector<double> kTemperatures{0.25, 0.5, 1.0, 2.0, 5.0};
constexpr int64_t kKeys = 6;  // as many keys as the running example, and chapter 2's preview
constexpr double kDead = 0.01;  // a Jacobian this small passes almost no gradient

Matrix row_matrix(const std::vector<float>& values) {
  Matrix m(1, int64_t(values.size()));
  for (size_t j = 0; j < values.size(); ++j) m(0, int64_t(j)) = values[j];
  return m;
}


// J = diag(p) - p pᵀ for one row p: J[i][j] = dp_i / dx_j. Built only to
// look at it; softmax_backward never needs it.
Matrix softmax_jacobian(const Matrix& p) {
  Matrix J = -(p.transpose() * p);
  J.diagonal() += p.transpose();
  return J;
}

struct NormRow {
  int64_t d_k;
  double score_std;              // of the unscaled q.k (chapter 2: sqrt(d_k))
  double raw_norm, scaled_norm;  // mean ||J||_F
  double raw_dead, scaled_dead;  // share of rows with ||J||_F < kDead
  double raw_max, scaled_max;    // mean largest weight
};

double rms(const Matrix& m) { return std::sqrt(double(m.squaredNorm()) / double(m.size())); }

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

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& weights,
                  const std::vector<double>& entropy, const std::vector<double>& temperatures,
                  const std::vector<NormRow>& norms) {
  const int64_t seq_len = int64_t(tokens.size());
  figures.draw("temperature.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("softmax(x / T) of one row x = [{}] at several temperatures", fmt::join(kTemperatureRow, ", "));
    p.xlabel = "key j (logit x_j falls from 2 to -2)";
    p.ylabel = "weight";
    const Matrix x = row_matrix(kTemperatureRow);
    for (double T : temperatures) {
      const Matrix w = softmax_rows(x / float(T));
      plot::Series s;
      const bool chosen = T == o.temperature;
      s.name = fmt::format("T = {:g}{}", T, chosen ? " (--temperature)" : "");
      s.style = chosen ? plot::Series::Style::LinesPoints : plot::Series::Style::Dashed;
      for (int64_t j = 0; j < w.cols(); ++j) {
        s.x.push_back(double(j));
        s.y.push_back(w(0, j));
      }
      p.series.push_back(s);
    }
    p.ymin = 0;
    p.ymax = 1;
    return plot::lines(path, p);
  });

  figures.draw("jacobian_norm.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("Mean Frobenius norm of the softmax Jacobian, rows of {} scores q.k", kKeys);
    p.xlabel = "d_k";
    p.ylabel = "mean ||diag(p) - p p^T||_F";
    plot::Series raw{"unscaled: softmax(q.k)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series scaled{"scaled: softmax(q.k / sqrt(d_k))", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series uniform{fmt::format("uniform row: sqrt({0}-1)/{0}", kKeys), {}, {}, plot::Series::Style::Dashed};
    for (const NormRow& r : norms) {
      raw.x.push_back(double(r.d_k));
      raw.y.push_back(r.raw_norm);
      scaled.x.push_back(double(r.d_k));
      scaled.y.push_back(r.scaled_norm);
      uniform.x.push_back(double(r.d_k));
      uniform.y.push_back(std::sqrt(double(kKeys - 1)) / double(kKeys));
    }
    p.series = {scaled, raw, uniform};
    p.logx = true;
    p.ymin = 0;
    return plot::lines(path, p);
  });

  figures.draw("attention_weights.png", [&](const std::string& path) {
    plot::Heatmap h = plot::weights_heatmap(
        fmt::format("Attention weights softmax(Q K^T / sqrt({})): every row sums to 1", o.d_k), weights, tokens);
    h.vmax.reset();  // one panel, untrained weights far below 1: the data's own range shows them
    h.cblabel = "weight";
    h.decimals = 3;
    return plot::heatmap(path, h);
  });

  figures.draw("entropy.png", [&](const std::string& path) {
    plot::BarChart c;
    const double bound = std::log(double(seq_len));
    // Untrained weights are close to uniform, so the bars are close to the
    // maximum and to each other: the title says so in numbers, rather than
    // letting six near-equal bars look like a plotting fault.
    const double lowest = *std::min_element(entropy.begin(), entropy.end());
    c.title = seq_len == 1 ? std::string("Entropy of the one query's weights: one key, so 0 (dashed: the maximum, log 1)")
                           : fmt::format("Entropy of each query's weights: all within {:.0f}% of the maximum log {} = "
                                         "{:.3f} (dashed), the entropy of uniform weights",
                                         std::ceil(100.0 * (1.0 - lowest / bound)), seq_len, bound);
    c.ylabel = "H = -sum_j a_j log a_j  (nats)";
    for (int64_t i = 0; i < seq_len; ++i) c.categories.push_back(fmt::format("{} ({})", tokens[size_t(i)], i));
    c.groups.push_back({"H of the row", entropy});
    // The bound is one number for every row: a reference line, not bars. Its
    // name is in the title: a label at the line's end would take a slot as
    // wide as a bar on the right.
    c.hlines.push_back({bound, ""});
    return plot::bars(path, c);
  });
}

void run(int argc, char** argv) {
  Options o;
  Cli cli("03-softmax",
          "Chapter 3: turn scaled scores into attention weights with a numerically stable softmax, compute "
          "attention(Q, K, V), and look at softmax's temperature, gradient and the entropy and focus metrics.");
  cli.add("--text", &o.text, "the sentence to attend over (words split on spaces, at most 64 words)");
  cli.add("--d-model", &o.d_model, "width of a token vector", IntRange{1, 4096});
  cli.add("--d-k", &o.d_k, "width of a query/key/value vector", IntRange{1, 4096});
  cli.add("--temperature", &o.temperature, "the temperature T highlighted in step 6 (softmax(x / T))",
          RealRange{0.0, 1e6, true, false});
  cli.add("--samples", &o.samples, "random score rows per d_k in the gradient experiment (step 8)",
          IntRange{1, 1'000'000});
  cli.parse(argc, argv);
  // x / T must stay a float: T below ~6e-39 turns the row's 2.0 into +inf.
  for (float x : kTemperatureRow)
    if (!std::isfinite(x / float(o.temperature)) || float(o.temperature) == 0.0f)
      throw UsageError(fmt::format("--temperature {} is too small: x / T overflows float32", o.temperature));

  // Refuse a text without words before printing anything.
  const auto tokens = tokenize_text(o.text);
  const int64_t seq_len = int64_t(tokens.size());
  // The run against the budget: step 8 draws a query and 6 keys for each of
  // --samples rows at 9 values of d_k, 0.21 ms a row on one core (4.1 s for
  // 20,000); 1,000,000 rows take about 3.5 minutes.
  cli.check_budget({0.5 + 2.5e-4 * double(o.samples) + 1e-7 * double(o.d_model) * double(o.d_k),
                    64e6 + 20.0 * double(o.d_model) * double(o.d_k), fmt::format("--samples {}", o.samples)});

  Figures figures(cli);
  const PrintOptions wide{.max_cols = 8};

  chapter_title("Chapter 3: from scores to attention weights");
  fmt::print("text \"{}\", d_model {}, d_k {}, seed {}, temperature {:g}, samples {}\n", o.text, o.d_model, o.d_k,
             cli.seed, o.temperature, o.samples);

  // ---------------------------------------------------------------------
  step(1, "The scaled scores of the running example");
  say("  Rebuilt exactly as in chapter 1 (same seed, same order of draws): tokens, embeddings plus positional "
      "encoding, three projections. Chapter 2 divides the scores by sqrt(d_k).");
  Generator gen(cli.seed);
  const RunningExample example = make_running_example(gen, tokens, o.d_model, o.d_k);
  const QKV& qkv = example.qkv;
  fmt::print("  tokens  {}\n", tokens);
  print_shape("X = E + PE", {1, seq_len, o.d_model});
  print_shape("Q, K, V", {1, seq_len, o.d_k});
  const Matrix scores = scaled_scores(qkv.Q, qkv.K);
  print_shape("scores = Q K^T / sqrt(d_k)", {1, seq_len, seq_len}, "(batch, seq_q, seq_k)");
  print_labelled("scores[0]", scores, tokens, tokens);

  // ---------------------------------------------------------------------
  step(2, "Softmax along the key dimension (the last one)");
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

  // ---------------------------------------------------------------------
  step(3, "The output: weights times values");
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

  // ---------------------------------------------------------------------
  step(4, "All of it in one call: attention(Q, K, V)");
  say("  attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, returning the output and the weights (later "
      "chapters draw, mask and measure the weights).");
  const Attention att = attention(qkv.Q, qkv.K, qkv.V);
  print_shape("attention(Q, K, V).output", {1, att.output.rows(), att.output.cols()}, "(batch, seq_q, d_v)");
  print_shape("attention(Q, K, V).weights", {1, att.weights.rows(), att.weights.cols()}, "(batch, seq_q, seq_k)");
  fmt::print("  largest difference from steps 2 and 3: weights {}, output {}\n"
             "  (float32 rounding at most: the same sums, possibly added in another order)\n",
             rounding((att.weights - weights).cwiseAbs().maxCoeff(), 1e-6),
             rounding((att.output - output).cwiseAbs().maxCoeff(), rounding_bound(output.cwiseAbs().maxCoeff())));

  // ---------------------------------------------------------------------
  step(5, "Why softmax subtracts the row maximum first");
  say("  In float32, exp(x) overflows to inf for x above 88.7 and underflows to 0 below about -103. The "
      "textbook formula therefore fails on rows that are perfectly reasonable once shifted:");
  // The formula straight from the definition, kept here only to show it
  // breaking. Never use it: softmax_rows is the stable version.
  auto naive_softmax = [](const Matrix& x) {
    Matrix e = x.array().exp();
    return Matrix(e / e.sum());
  };
  for (const std::vector<float>& values : {std::vector<float>{1000, 999, 998}, std::vector<float>{-1000, -999, -998}}) {
    const Matrix x = row_matrix(values);
    const Matrix e = x.array().exp();
    fmt::print("  x = {}\n", format_row(x, 0, 0));
    fmt::print("    naive   exp(x) = {}, sum {} -> {}\n", format_row(e, 0, 0), format_value(e.sum(), 0),
               format_row(naive_softmax(x)));
    fmt::print("    stable  exp(x - max) = {} -> {}\n", format_row(Matrix((x.array() - x.maxCoeff()).exp())),
               format_row(softmax_rows(x)));
  }
  say("  softmax(x) = softmax(x - c) for any constant c, because exp(x_j - c) = exp(x_j) exp(-c) and the "
      "factor exp(-c) cancels between numerator and sum. With c = max(x) every exponent is <= 0 (no overflow) "
      "and the largest term is exp(0) = 1 (the sum cannot underflow to 0). Both rows above are [0, -1, -2] "
      "after the shift, hence the same weights.");
  const float inf = std::numeric_limits<float>::infinity();
  auto edge_case = [](std::string_view what, std::string_view call, const Matrix& x, std::string_view note) {
    fmt::print("  {:<17} {:<27} = {}{}\n", what, call, format_row(softmax_rows(x)), note);
  };
  edge_case("a masked entry:", "softmax([2, -inf, 1])", row_matrix({2.0f, -inf, 1.0f}), "   (exactly 0)");
  edge_case("giant logits:", "softmax([1e30, -1e30, 0])", row_matrix({1e30f, -1e30f, 0.0f}), "");
  edge_case("nothing visible:", "softmax([-inf, -inf, -inf])", row_matrix({-inf, -inf, -inf}),
            "\n    (a query allowed to see no key: the book's choice is zeros; PyTorch 1.13 gives nan)");
  try {
    softmax_rows(row_matrix({1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f}));
  } catch (const std::invalid_argument& e) {
    fmt::print("  a NaN score is refused: \"{}\"\n", e.what());
  }

  // ---------------------------------------------------------------------
  step(6, "Temperature: softmax(x / T)");
  std::vector<double> temperatures = kTemperatures;
  if (std::find(temperatures.begin(), temperatures.end(), o.temperature) == temperatures.end()) {
    temperatures.push_back(o.temperature);
    std::sort(temperatures.begin(), temperatures.end());
  }
  const Matrix x_t = row_matrix(kTemperatureRow);
  fmt::print("  x = {}\n", format_row(x_t, 0, 1));
  for (double T : temperatures) {
    const Matrix w = softmax_rows(x_t / float(T));
    fmt::print("  T = {:<5g} {}   largest {:.4f}{}\n", T, format_row(w), w.maxCoeff(),
               T == o.temperature ? "   <- --temperature" : "");
  }
  say("  Dividing by T > 1 shrinks the gaps between logits and flattens the weights toward uniform (1/6 = "
      "0.1667 each); T < 1 stretches the gaps and sharpens them toward one-hot. The order of the weights never "
      "changes. Dividing by sqrt(d_k) is a temperature too: T = sqrt(d_k), chosen so that scores have "
      "variance 1 whatever d_k is.");

  // ---------------------------------------------------------------------
  step(7, "The gradient of softmax");
  say("  For p = softmax(x): dp_i/dx_j = p_i (delta_ij - p_j), i.e. the Jacobian J = diag(p) - p p^T. It is "
      "symmetric, and each of its rows sums to 0 (adding a constant to x changes nothing).");
  const Matrix x_g = row_matrix({2.0f, 1.0f, 0.1f});
  const Matrix p_g = softmax_rows(x_g);
  const Matrix J = softmax_jacobian(p_g);
  fmt::print("  x = {}   p = softmax(x) = {}\n", format_row(x_g, 0, 1), format_row(p_g));
  print_tensor("J = diag(p) - p p^T", J, {3, 3});
  fmt::print("  row sums of J: {}, {}, {}   (0 up to float32 rounding)\n", rounding(J.row(0).sum(), 1e-6),
             rounding(J.row(1).sum(), 1e-6), rounding(J.row(2).sum(), 1e-6));
  const Matrix dy = row_matrix({0.5f, -1.0f, 2.0f});
  const Matrix dx_J = dy * J;
  const Matrix dx = softmax_backward(p_g, dy);
  say("  A backward pass does not build J. Given dy = dL/dp from the layer above, it needs dx = dy^T J, which "
      "simplifies to dx = p * (dy - <p, dy>) (elementwise): one dot product per row, O(n) instead of O(n^2).");
  fmt::print("  dy = {}   <p, dy> = {:.4f}\n", format_row(dy, 0, 1), (p_g.array() * dy.array()).sum());
  fmt::print("  {:<35} = {}\n", "dy^T J", format_row(dx_J));
  fmt::print("  {:<35} = {}   largest difference {}\n", "softmax_backward: p * (dy - <p,dy>)", format_row(dx),
             rounding((dx - dx_J).cwiseAbs().maxCoeff(), 1e-6));
  {
    // Central differences of L(x) = <dy, softmax(x)>, in float: h = 1e-2
    // keeps the rounding (~1e-7 / h) and the truncation (~h^2) near 1e-5.
    const float h = 1e-2f;
    Matrix fd(1, 3), moved = x_g;
    for (int64_t j = 0; j < 3; ++j)
      fd(0, j) = float(central_difference(moved(0, j), h, [&] {
        return double((dy.array() * softmax_rows(moved).array()).sum());
      }));
    fmt::print("  {:<35} = {}   largest difference {}\n", "central differences (h = 0.01)", format_row(fd),
               rounding((fd - dx).cwiseAbs().maxCoeff(), 1e-5));
  }

  // ---------------------------------------------------------------------
  step(8, "Chapter 2's vanishing gradient, measured");
  say(fmt::format("  For each d_k: {} rows, each the {} scores q.k of one query q against {} keys k, all with "
                  "independent N(0, 1) components (drawn q, then K, per row, from a generator seeded {}). For "
                  "each row, the Frobenius norm ||J||_F of softmax's Jacobian, without and with the division "
                  "by sqrt(d_k). For reference: a uniform row has ||J||_F = sqrt(n-1)/n = {:.4f}, a one-hot row "
                  "has 0.",
                  o.samples, kKeys, kKeys, cli.seed, std::sqrt(double(kKeys - 1)) / double(kKeys)));
  std::vector<NormRow> norms;
  {
    Generator exp_gen(cli.seed);
    fmt::print("\n  {:>5}  {:>8}   {:^17}   {:^17}   {:^17}\n", "", "", "mean ||J||_F", "||J||_F < 0.01",
               "mean largest p");
    fmt::print("  {:>5}  {:>8}   {:>8} {:>8}   {:>8} {:>8}   {:>8} {:>8}\n", "d_k", "std(q.k)", "unscaled", "scaled",
               "unscaled", "scaled", "unscaled", "scaled");
    for (int64_t d_k = 4; d_k <= 1024; d_k *= 2) {
      double sum_sq = 0, raw_norm = 0, scaled_norm = 0, raw_dead = 0, scaled_dead = 0, raw_max = 0, scaled_max = 0;
      for (int64_t s = 0; s < o.samples; ++s) {
        const Matrix q = exp_gen.randn(1, d_k);
        const Matrix K = exp_gen.randn(kKeys, d_k);
        const Matrix raw = q * K.transpose();
        sum_sq += raw.squaredNorm();
        const Matrix p_raw = softmax_rows(raw);
        const Matrix p_scaled = softmax_rows(scaled_scores(q, K));
        const double raw_J = softmax_jacobian(p_raw).norm(), scaled_J = softmax_jacobian(p_scaled).norm();
        raw_norm += raw_J;
        scaled_norm += scaled_J;
        raw_dead += raw_J < kDead;
        scaled_dead += scaled_J < kDead;
        raw_max += p_raw.maxCoeff();
        scaled_max += p_scaled.maxCoeff();
      }
      const double n = double(o.samples);
      norms.push_back({d_k, std::sqrt(sum_sq / (n * kKeys)), raw_norm / n, scaled_norm / n, raw_dead / n,
                       scaled_dead / n, raw_max / n, scaled_max / n});
      const NormRow& r = norms.back();
      fmt::print("  {:>5}  {:>8.2f}   {:>8.4f} {:>8.4f}   {:>7.1f}% {:>7.1f}%   {:>8.4f} {:>8.4f}\n", r.d_k, r.score_std,
                 r.raw_norm, r.scaled_norm, 100 * r.raw_dead, 100 * r.scaled_dead, r.raw_max, r.scaled_max);
    }
  }
  double worst_scaled_dead = 0;
  for (const NormRow& r : norms) worst_scaled_dead = std::max(worst_scaled_dead, r.scaled_dead);
  const double shrink = norms.back().raw_norm > 0 ? norms.front().raw_norm / norms.back().raw_norm : 0.0;
  double scaled_lo = norms.front().scaled_norm, scaled_hi = scaled_lo;
  for (const NormRow& r : norms) scaled_lo = std::min(scaled_lo, r.scaled_norm), scaled_hi = std::max(scaled_hi, r.scaled_norm);
  say(fmt::format("\n  Unscaled, the scores' spread grows like sqrt(d_k) (chapter 2), the largest weight tends "
                  "towards 1, and the Jacobian, the only path by which a gradient reaches the scores and through "
                  "them Q and K, shrinks from {:.4f} at d_k = 4 to {:.4f} at d_k = 1024, {}. The mean "
                  "hides how uneven it is: at d_k = 1024, {:.0f}% of the rows have ||J||_F < {} and pass "
                  "practically nothing back. Scaled, the scores keep variance 1, and the norm stays between {:.2f} "
                  "and {:.2f} at every d_k, with {}.",
                  norms.front().raw_norm, norms.back().raw_norm,
                  shrink > 0 ? fmt::format("{:.1f} times less", shrink) : std::string("to nothing measurable"),
                  100 * norms.back().raw_dead, kDead, scaled_lo, scaled_hi,
                  worst_scaled_dead == 0 ? std::string("not one row that small")
                                         : fmt::format("at most {:.1f}% of rows that small", 100 * worst_scaled_dead)));

  // ---------------------------------------------------------------------
  step(9, "The wrong way to hide keys: zeroing weights after softmax");
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

  // ---------------------------------------------------------------------
  step(10, "Two numbers to describe attention: entropy and focus");
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

  // ---------------------------------------------------------------------
  step(11, "Without softmax: nothing keeps the output's size");
  show_without_softmax(cli.seed);

  gap();
  fmt::print("Drawing figures\n");
  draw_figures(figures, o, tokens, weights, entropy, temperatures, norms);
  figures.summary();
  fmt::print("Next: chapter 4 runs several of these attentions side by side (multi-head).\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("03-softmax", [&] { run(argc, argv); });
}
