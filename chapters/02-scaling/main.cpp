// Chapter 2: why attention divides the scores by sqrt(d_k).
//
// Rebuilds chapter 1's Q and K of "the cat sat on the mat", prints the raw
// scores Q K^T and the scaled scores Q K^T / sqrt(d_k), then measures the
// argument: the variance of q.k for random vectors grows like d_k, the
// variance of q.k / sqrt(d_k) stays at 1, and unscaled score rows make
// softmax nearly one-hot as d_k grows.
#include "02-scaling/scaling.hpp"

#include "01-qkv-projection/qkv.hpp"
#include "01-qkv-projection/running_example.hpp"
#include "sa/cli.hpp"
#include "sa/figures.hpp"
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
#include <vector>

using namespace sa;

namespace {

struct Options {
  std::string text = "the cat sat on the mat";
  int64_t d_model = 64;
  int64_t d_k = 64;          // width of Q and K in the running example
  int64_t samples = 20000;   // dot products per d_k in the experiment
  int64_t max_d_k = 1024;    // the experiment runs d_k = 4, 8, ..., max_d_k
  int64_t keys = 6;          // scores per row in the softmax preview
};

// Rows drawn per d_k for the softmax preview's average.
constexpr int64_t kSoftmaxRows = 1000;
// The d_k of the histograms: large enough that the raw scores are wide.
constexpr int64_t kHistogramDk = 512;
// The histogram's score matrix: 100 queries x 200 keys = 20000 scores.
constexpr int64_t kHistogramQueries = 100, kHistogramKeys = 200;
// q and k are each (samples, d_k) floats, held at once (all of q is drawn
// before k, as in PyTorch): cap their size at 2 x 200 MB.
constexpr int64_t kMaxFloatsPerMatrix = 50'000'000;

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

// Mean and standard deviation of all entries of a matrix.
struct Spread {
  double mean, std;
};
Spread spread(const Matrix& m) {
  const double mean = m.cast<double>().mean();
  const double var = (m.cast<double>().array() - mean).square().sum() / double(m.size());
  return {mean, std::sqrt(var)};
}

std::vector<double> to_doubles(const Matrix& m) {
  std::vector<double> v(size_t(m.size()));
  for (int64_t i = 0; i < m.size(); ++i) v[size_t(i)] = m.data()[i];
  return v;
}

std::vector<int64_t> d_k_values(int64_t max_d_k) {
  std::vector<int64_t> values;
  for (int64_t d = 4; d <= max_d_k; d *= 2) values.push_back(d);
  return values;
}

void check_options(const Options& o) {
  // d_k = 4, 8, ..., max_d_k only reaches max_d_k when it is a power of two.
  if ((o.max_d_k & (o.max_d_k - 1)) != 0)
    throw UsageError(fmt::format("--max-d-k must be a power of two (4, 8, ..., 8192), got {}", o.max_d_k));
  if (o.samples * o.max_d_k > kMaxFloatsPerMatrix)
    throw UsageError(fmt::format("--samples x --max-d-k = {} x {} is too large: q and k would need {:.1f} GB; "
                                 "keep the product at most {}",
                                 o.samples, o.max_d_k, 2.0 * 4.0 * double(o.samples * o.max_d_k) / 1e9,
                                 kMaxFloatsPerMatrix));
}

struct Measured {
  std::vector<double> d_k;
  std::vector<DotStats> stats;
  std::vector<double> raw_largest, scaled_largest;  // softmax preview, mean over rows
};

// A dot product is |q| |k| cos θ: how much of a score comes from the
// lengths of the two vectors and how much from the angle between them.
struct Geometry {
  std::vector<double> cosines, scores;  // one per (query, key) pair, for the figure
  double min_lengths = 0, max_lengths = 0;  // smallest and largest |q| |k|
};

Geometry show_dot_product_geometry(const QKV& qkv, const std::vector<std::string>& tokens) {
  say("The dot product has a second reading: q . k = |q| |k| cos(theta), the two lengths times the cosine of "
      "the angle between the vectors. The angle says how well they point the same way; the lengths scale it. "
      "A longer key can win against a better-aligned one. By hand, in 2 dimensions, with q = (1, 0):");
  const float k1x = 1.0f, k1y = 0.1f, k2x = 3.0f, k2y = 3.0f;
  const double n1 = std::hypot(k1x, k1y), n2 = std::hypot(k2x, k2y);
  fmt::print("  k1 = ({}, {}): |k1| = {:.3f}, cos = {:.3f}, q . k1 = {}\n", k1x, k1y, n1, k1x / n1, k1x);
  fmt::print("  k2 = ({}, {}): |k2| = {:.3f}, cos = {:.3f}, q . k2 = {}\n", k2x, k2y, n2, k2x / n2, k2x);
  say("k1 points almost exactly along q (about 6 degrees off) and k2 at 45 degrees, yet k2 scores three times "
      "higher: it is more than four times longer.");

  const int64_t n = qkv.Q.rows();
  const Eigen::VectorXf q_len = qkv.Q.rowwise().norm(), k_len = qkv.K.rowwise().norm();
  const Matrix scores = qkv.Q * qkv.K.transpose();
  Geometry g;
  g.min_lengths = std::numeric_limits<double>::infinity();
  int64_t differ = 0, zero_rows = 0;
  std::string example;
  for (int64_t i = 0; i < n; ++i) {
    int64_t by_score = 0, by_angle = 0;
    double best_cos = -2;
    for (int64_t j = 0; j < n; ++j) {
      const double lengths = double(q_len(i)) * double(k_len(j));
      // A zero vector has no direction: count its pairs as cos 0 (no angle to speak of).
      const double c = lengths > 0 ? double(scores(i, j)) / lengths : 0.0;
      g.cosines.push_back(c);
      g.scores.push_back(scores(i, j));
      g.min_lengths = std::min(g.min_lengths, lengths);
      g.max_lengths = std::max(g.max_lengths, lengths);
      if (scores(i, j) > scores(i, by_score)) by_score = j;
      if (c > best_cos) best_cos = c, by_angle = j;
    }
    if (q_len(i) == 0.0f) ++zero_rows;
    if (by_score != by_angle) {
      ++differ;
      if (example.empty())
        example = fmt::format("Query {} ('{}') scores highest with key {} ('{}': |k| {:.2f}, cos {:.3f}, score "
                              "{:.3f}), but points most nearly the same way as key {} ('{}': |k| {:.2f}, cos "
                              "{:.3f}, score {:.3f}).",
                              i, tokens[size_t(i)], by_score, tokens[size_t(by_score)], k_len(by_score),
                              scores(i, by_score) / (q_len(i) * k_len(by_score)), scores(i, by_score), by_angle,
                              tokens[size_t(by_angle)], k_len(by_angle),
                              scores(i, by_angle) / (q_len(i) * k_len(by_angle)), scores(i, by_angle));
    }
  }
  fmt::print("  lengths in the running example: |q| from {:.3f} to {:.3f}, |k| from {:.3f} to {:.3f}\n",
             q_len.minCoeff(), q_len.maxCoeff(), k_len.minCoeff(), k_len.maxCoeff());
  const std::string zero_note =
      zero_rows ? fmt::format(" ({} query of length 0 has no direction)", zero_rows) : std::string();
  if (differ == 0)
    say(fmt::format("In {} of the running example, the key with the highest score is also the best-aligned "
                    "one{}: here length never overturned the angle.",
                    n == 1 ? std::string("the one row") : fmt::format("every one of the {} rows", n), zero_note));
  else
    say(fmt::format("In {} of the {} rows of the running example, the key with the highest score is not the "
                    "best-aligned one{}. {}",
                    differ, n, zero_note, example));
  say("Scaling by 1/sqrt(d_k) divides every score alike, so it changes neither of these rankings; it only "
      "keeps the sizes in a range softmax handles well. Lengths are learned like everything else: a key "
      "that grows during training makes every score it takes part in larger in size, for or against it.");
  return g;
}

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& scaled,
                  const Measured& m, const Matrix& hist_raw, const Matrix& hist_scaled, int64_t hist_d_k,
                  const Geometry& geometry) {
  figures.draw("dot_product_geometry.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Every score of the running example against the cosine of its angle: q . k = |q| |k| cos(theta)";
    p.xlabel = "cos(theta) between query i and key j";
    p.ylabel = "raw score q_i . k_j";
    plot::Series pairs{"pairs (query, key)", geometry.cosines, geometry.scores, plot::Series::Style::Points};
    // The two lines |q| |k| cos over the cosines that occur: every pair lies
    // on the line of its own length product, between these two.
    const auto [lo, hi] = std::minmax_element(geometry.cosines.begin(), geometry.cosines.end());
    const double a = *lo - 0.05, b = *hi + 0.05;
    plot::Series low{fmt::format("|q| |k| = {:.2f} (smallest pair)", geometry.min_lengths), {a, b},
                     {a * geometry.min_lengths, b * geometry.min_lengths}, plot::Series::Style::Dashed};
    plot::Series high{fmt::format("|q| |k| = {:.2f} (largest pair)", geometry.max_lengths), {a, b},
                      {a * geometry.max_lengths, b * geometry.max_lengths}, plot::Series::Style::Dashed};
    p.series = {pairs, low, high};
    return plot::lines(path, p);
  });

  figures.draw("variance_vs_d_k.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("Variance of q . k for q, k ~ N(0, 1)^d_k ({} samples per point)", o.samples);
    p.xlabel = "d_k";
    p.ylabel = "variance (log scale)";
    p.logx = p.logy = true;
    plot::Series raw{"measured Var(q . k)", m.d_k, {}, plot::Series::Style::Points};
    plot::Series raw_theory{"theory: d_k", m.d_k, m.d_k, plot::Series::Style::Lines};
    plot::Series scaled_pts{"measured Var(q . k / sqrt(d_k))", m.d_k, {}, plot::Series::Style::Points};
    plot::Series scaled_theory{"theory: 1", m.d_k, std::vector<double>(m.d_k.size(), 1.0),
                               plot::Series::Style::Dashed};
    for (const DotStats& s : m.stats) {
      raw.y.push_back(s.variance);
      scaled_pts.y.push_back(s.scaled_variance);
    }
    p.series = {raw_theory, raw, scaled_theory, scaled_pts};
    p.ymin = 0.5;
    p.ymax = 2.0 * m.d_k.back();
    return plot::lines(path, p);
  });

  figures.draw(fmt::format("score_histograms_d_k_{}.png", hist_d_k), [&](const std::string& path) {
    const Spread r = spread(hist_raw), s = spread(hist_scaled);
    plot::Histogram h;
    h.title = fmt::format("{} scores of random q, k at d_k = {}: raw std {:.1f}, scaled std {:.2f}", hist_raw.size(),
                          hist_d_k, r.std, s.std);
    h.xlabel = "score";
    h.series = {{"raw: q . k", to_doubles(hist_raw), {}},
                {fmt::format("scaled: q . k / sqrt({})", hist_d_k), to_doubles(hist_scaled), {}}};
    h.bins = 60;
    // Two panels, each with its own bins: shared bins would make the scaled
    // histogram, 22.6 times narrower, a single spike.
    h.own_axes = true;
    return plot::histogram(path, h);
  });

  figures.draw("largest_weight_vs_d_k.png", [&](const std::string& path) {
    // Bars rather than lines: one pair per d_k reads at a glance, and the
    // value on each bar is the number the table prints.
    plot::BarChart c;
    c.title = fmt::format("Largest softmax weight in a row of {} random scores (mean of {} rows)", o.keys,
                          kSoftmaxRows);
    c.ylabel = fmt::format("largest weight (uniform row: 1/{} = {:.3f})", o.keys, 1.0 / double(o.keys));
    for (double d_k : m.d_k) c.categories.push_back(fmt::format("d_k={}", d_k));
    c.groups = {{"without scaling: softmax(q . k)", m.raw_largest},
                {"with scaling: softmax(q . k / sqrt(d_k))", m.scaled_largest}};
    return plot::bars(path, c);
  });

  figures.draw("scaled_scores.png", [&](const std::string& path) {
    plot::Heatmap h;
    h.title = fmt::format("Scaled scores Q K^T / sqrt({}) of the running example", o.d_k);
    h.values = scaled;
    h.row_labels = tokens;
    h.col_labels = tokens;
    h.cblabel = "q . k / sqrt(d_k)";
    h.diverging = true;
    h.decimals = 2;
    return plot::heatmap(path, h);
  });
}

void run(int argc, char** argv) {
  Options o;
  Cli cli("02-scaling",
          "Chapter 2: the scores Q K^T and why attention divides them by sqrt(d_k), measured on random "
          "vectors for d_k = 4 ... max-d-k, with a preview of what unscaled scores do to softmax.");
  cli.add("--text", &o.text, "the sentence of the running example (words split on spaces, at most 64 words)");
  cli.add("--d-model", &o.d_model, "width of a token vector in the running example", IntRange{1, 4096});
  cli.add("--d-k", &o.d_k, "width of a query/key vector in the running example", IntRange{1, 4096});
  cli.add("--samples", &o.samples, "dot products drawn per d_k in the experiment", IntRange{2, 10'000'000});
  cli.add("--max-d-k", &o.max_d_k, "largest d_k of the experiment, a power of two", IntRange{4, 8192});
  cli.add("--keys", &o.keys, "scores per row in the softmax preview", IntRange{2, 1024});
  cli.parse(argc, argv);
  check_options(o);
  // The run against the budget. The experiment draws --samples q and k for
  // every d_k up to --max-d-k (2 x 2 x samples x max_d_k numbers in all; 4 s
  // of CPU and 400 MB at the largest product the check above allows). The
  // softmax preview draws 1000 x --keys keys for every d_k, and holds those
  // of the largest at once: --keys 1024 at --max-d-k 1024 is 4 GB and a
  // minute, at 8192 33 GB (2.2e-8 s per key and column measured; 3e-8 here).
  const double d_k_sum = 2.0 * double(o.max_d_k);  // 4 + 8 + ... + max_d_k
  const double preview = double(kSoftmaxRows) * double(o.keys);
  cli.check_budget({0.5 + 6e-8 * 2.0 * double(o.samples) * double(o.max_d_k) + 3e-8 * preview * d_k_sum +
                        1e-7 * double(o.d_model) * double(o.d_k),
                    8.0 * double(o.samples) * double(o.max_d_k) + 4.0 * preview * double(o.max_d_k) +
                        20.0 * double(o.d_model) * double(o.d_k),
                    fmt::format("--samples {} --max-d-k {} --keys {}", o.samples, o.max_d_k, o.keys)});

  // Before any output, so a text without words is one line, not half a page.
  const auto tokens = tokenize_text(o.text);
  Figures figures(cli);
  const PrintOptions wide{.max_cols = 8};

  chapter_title("Chapter 2: why the scores are divided by sqrt(d_k)");
  fmt::print("text \"{}\", d_model {}, d_k {}, seed {}; experiment: d_k 4 ... {}, {} samples each\n", o.text,
             o.d_model, o.d_k, cli.seed, o.max_d_k, o.samples);

  // ---------------------------------------------------------------------
  step(1, "Rebuild Q and K of the running example (chapter 1)");
  // The same calls in the same order as chapter 1, so the same seed gives
  // the same numbers: table, then W_q, W_k, W_v.
  Generator gen(cli.seed);
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

  // ---------------------------------------------------------------------
  step(2, "Raw scores: every query against every key");
  const Matrix raw = qkv.Q * qkv.K.transpose();
  say(fmt::format("scores[i, j] = q_i . k_j = sum over {} dimensions of q_i[d] * k_j[d].  "
                  "Q (1, {}, {}) times K^T (1, {}, {}) gives (1, {}, {}).",
                  o.d_k, seq_len, o.d_k, o.d_k, seq_len, seq_len, seq_len));
  print_shape("scores = Q K^T", {1, seq_len, seq_len}, "(batch, queries, keys)");
  print_labelled("scores[0]", raw, tokens, tokens, {.precision = 3});
  const Spread raw_spread = spread(raw);
  fmt::print("  entries: std {:.3f}, largest |score| {:.3f}\n", raw_spread.std, raw.cwiseAbs().maxCoeff());

  // ---------------------------------------------------------------------
  step(3, "Scaled scores: divide by sqrt(d_k)");
  const Matrix scaled = scaled_scores(qkv.Q, qkv.K);
  const double sqrt_d_k = std::sqrt(double(o.d_k));
  say(fmt::format("scaled = Q K^T / sqrt(d_k) = Q K^T / sqrt({}) = Q K^T / {:.4g}. Same shape, same "
                  "order of the entries in every row, smaller numbers.",
                  o.d_k, sqrt_d_k));
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
  else
    say(fmt::format(
      "Why is the scaled spread {:.2f} and not 1? The argument below assumes query and key entries with "
      "variance 1. Here they come from nn.Linear's small initial weights, with std {:.2f} and {:.2f}, so "
      "the scaled scores can only be expected to spread by about {:.2f} x {:.2f} = {:.2f}; with {} scores "
      "from entries that are neither independent nor centred, 'about' is all the argument promises. "
      "Dividing by sqrt(d_k) removes the growth with d_k, not the scale of the entries themselves (training "
      "sets that).",
      scaled_spread.std, q_spread.std, k_spread.std, q_spread.std, k_spread.std, q_spread.std * k_spread.std,
      raw.size()));

  // ---------------------------------------------------------------------
  step(4, "Why sqrt(d_k): the variance of a dot product, measured");
  say("Take q and k with independent entries of mean 0 and variance 1. Each product q[d] k[d] has mean "
      "E[q]E[k] = 0 and variance E[q^2]E[k^2] = 1. A dot product adds d_k such independent products, and "
      "variances of independent terms add:");
  fmt::print("\n      Var(q . k) = d_k        so      Var(q . k / sqrt(d_k)) = d_k / d_k = 1\n\n");
  say("The typical raw score is sqrt(d_k) in size: 8 at d_k = 64, 22.6 at d_k = 512. Dividing by sqrt(d_k), "
      "not by d_k, is exactly what brings the variance back to 1.");
  const double rel_se_gauss = std::sqrt(2.0 / double(o.samples - 1));
  gap();
  say(fmt::format(
      "The experiment: for each d_k, draw q = randn({0}, d_k), then k = randn({0}, d_k), and take the "
      "{0} row-wise dot products (dot_product_stats). How close should the measured variance be? From "
      "n = {0} samples a variance has a relative standard error of about sqrt(2/(n-1)) = {1:.2f}%. A "
      "product q[d] k[d] has heavier tails than a Gaussian (fourth moment 9, not 3), which adds a little:",
      o.samples, 100.0 * rel_se_gauss));
  fmt::print("\n      relative standard error (s.e.) = sqrt(2/(n-1) + 6/(n d_k))\n\n");
  say("The last two columns give that error and how many of them the measured variance misses the theory by.");

  Measured m;
  Generator stats_gen(cli.seed);  // torch.manual_seed(seed), then the loop below
  fmt::print("\n  {:>5} | {:>9} {:>10} {:>6} | {:>12} {:>12} {:>6} | {:>9} {:>10}\n", "d_k", "mean q.k",
             "var q.k", "theory", "mean scaled", "var scaled", "theory", "rel. s.e.", "off (s.e.)");
  fmt::print("  {:-<5}-+-{:-<9}-{:-<10}-{:-<6}-+-{:-<12}-{:-<12}-{:-<6}-+-{:-<9}-{:-<10}\n", "", "", "", "", "", "", "",
             "", "");
  double worst_sigma = 0;
  for (const int64_t d_k : d_k_values(o.max_d_k)) {
    const DotStats s = dot_product_stats(stats_gen, d_k, o.samples);
    const double rel_se = std::sqrt(2.0 / double(o.samples - 1) + 6.0 / (double(o.samples) * double(d_k)));
    const double sigmas = (s.scaled_variance - 1.0) / rel_se;
    worst_sigma = std::max(worst_sigma, std::abs(sigmas));
    fmt::print("  {:>5} | {:>+9.4f} {:>10.3f} {:>6} | {:>+12.4f} {:>12.4f} {:>6} | {:>8.2f}% {:>+10.2f}\n", d_k,
               s.mean, s.variance, d_k, s.scaled_mean, s.scaled_variance, 1, 100.0 * rel_se, sigmas);
    m.d_k.push_back(double(d_k));
    m.stats.push_back(s);
  }
  fmt::print("  theory of both means: 0.  off = (measured variance / theory - 1) / rel. s.e.\n\n");
  // How often chance alone makes the largest of N independent misses at
  // least this big: 1 - (1 - P(|z| >= w))^N, with P(|z| >= w) = erfc(w / sqrt 2).
  const double p_worst = 1.0 - std::pow(1.0 - std::erfc(worst_sigma / std::sqrt(2.0)), double(m.d_k.size()));
  // Said from the table: what theory predicts, and whether these rows agree.
  std::string verdict = m.d_k.size() > 1
                            ? "In theory the raw variance doubles with every doubling of d_k and the scaled one "
                              "stays at 1. "
                            : fmt::format("In theory the raw variance is d_k = {} and the scaled one 1. ",
                                          m.d_k.front());
  verdict += fmt::format("The largest miss here is {:.2f} standard errors", worst_sigma);
  if (o.samples >= 30)
    verdict += fmt::format("; with {} independent row{}, chance alone gives a miss at least that large in {:.0f}% "
                           "of runs (try other --seed values).",
                           m.d_k.size(), m.d_k.size() == 1 ? "" : "s", 100.0 * p_worst);
  else
    verdict += fmt::format(", but with {} samples a variance estimate is too rough for that yardstick (it assumes "
                           "many samples): use --samples 1000 or more to see the law.",
                           o.samples);
  say(verdict);

  // ---------------------------------------------------------------------
  const int64_t hist_d_k = std::min(kHistogramDk, o.max_d_k);
  step(5, fmt::format("What the spread looks like at d_k = {}", hist_d_k));
  Generator hist_gen(cli.seed);
  const Matrix Q_big = hist_gen.randn(kHistogramQueries, hist_d_k);
  const Matrix K_big = hist_gen.randn(kHistogramKeys, hist_d_k);
  const Matrix hist_raw = Q_big * K_big.transpose();
  const Matrix hist_scaled = scaled_scores(Q_big, K_big);
  print_shape("Q", {kHistogramQueries, hist_d_k}, "entries ~ N(0, 1)");
  print_shape("K", {kHistogramKeys, hist_d_k}, "entries ~ N(0, 1)");
  const Spread hr = spread(hist_raw), hs = spread(hist_scaled);
  print_shape("Q K^T", {kHistogramQueries, kHistogramKeys});
  fmt::print("    std {:7.3f} (theory sqrt({}) = {:.3f}), range [{:.2f}, {:.2f}]\n", hr.std, hist_d_k,
             std::sqrt(double(hist_d_k)), hist_raw.minCoeff(), hist_raw.maxCoeff());
  print_shape("Q K^T / sqrt(d_k)", {kHistogramQueries, kHistogramKeys});
  fmt::print("    std {:7.3f} (theory 1), range [{:.2f}, {:.2f}]\n", hs.std, hist_scaled.minCoeff(),
             hist_scaled.maxCoeff());
  say("The shape of the distribution is the same; only its width changes, by sqrt(d_k).");

  // ---------------------------------------------------------------------
  step(6, "The consequence for softmax (a preview of chapter 3)");
  say(fmt::format(
      "Softmax turns a row of scores into weights exp(s_j) / sum_i exp(s_i). Its largest weight is "
      "1 / sum_i exp(s_i - max s): 1/{} = {:.3f} when all {} scores are equal, 1 when one score stands far "
      "above the rest. For each d_k: one query against {} keys, raw and scaled, then the mean over {} such rows.",
      o.keys, 1.0 / double(o.keys), o.keys, o.keys, kSoftmaxRows));
  Generator softmax_gen(cli.seed);
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
    text += fmt::format(" With scaling it stays between {:.3f} and {:.3f}. Chapter 3 measures that gradient.", *lo,
                        *hi);
    say(text);
  }

  gap();
  fmt::print("  Back to the running example, row by row (d_k = {}):\n", o.d_k);
  const auto raw_w = largest_softmax_weights(raw), scaled_w = largest_softmax_weights(scaled);
  fmt::print("    {:>8}  {:>12}  {:>12}\n", "query", "raw", "scaled");
  for (int64_t i = 0; i < seq_len; ++i)
    fmt::print("    {:>8}  {:>12.4f}  {:>12.4f}\n", tokens[size_t(i)], raw_w[size_t(i)], scaled_w[size_t(i)]);
  say(fmt::format("(largest softmax weight of each row; uniform would be 1/{} = {:.3f})", seq_len,
                  1.0 / double(seq_len)));

  // ---------------------------------------------------------------------
  step(7, "Length against angle: q . k = |q| |k| cos(theta)");
  const Geometry geometry = show_dot_product_geometry(qkv, tokens);

  gap();
  fmt::print("Drawing figures\n");
  draw_figures(figures, o, tokens, scaled, m, hist_raw, hist_scaled, hist_d_k, geometry);
  figures.summary();
  fmt::print("Next: chapter 3 turns the scaled scores into attention weights with softmax.\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("02-scaling", [&] { run(argc, argv); });
}
