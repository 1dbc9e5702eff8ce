// The steps of chapter 2's program (main.cpp lists them in order). Each
// prints its shapes and values; the figures are drawn after the last step.
//   steps_scores.cpp    steps 1 to 3: the running example's Q and K, raw and scaled scores
//   steps_variance.cpp  steps 4 and 5: the variance of q.k measured, and its histograms
//   steps_softmax.cpp   step 6: what unscaled scores do to softmax (a preview of chapter 3)
//   steps_geometry.cpp  step 7: length against angle, q . k = |q| |k| cos(theta)
//   steps_figures.cpp   the figures
#pragma once

#include "01-qkv-projection/qkv.hpp"
#include "02-scaling/scaling.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sa::ch2 {

struct Options {
  std::string text = "the cat sat on the mat";
  int64_t d_model = 64;
  int64_t d_k = 64;          // width of Q and K in the running example
  int64_t samples = 20000;   // dot products per d_k in the experiment
  int64_t max_d_k = 1024;    // the experiment runs d_k = 4, 8, ..., max_d_k
  int64_t keys = 6;          // scores per row in the softmax preview
};

// Rows drawn per d_k for the softmax preview's average.
inline constexpr int64_t kSoftmaxRows = 1000;
// The d_k of the histograms: large enough that the raw scores are wide.
inline constexpr int64_t kHistogramDk = 512;
// The histogram's score matrix: 100 queries x 200 keys = 20000 scores.
inline constexpr int64_t kHistogramQueries = 100, kHistogramKeys = 200;

// Throws UsageError naming the options when they ask for what the
// experiment cannot do.
inline void check_options(const Options& o) {
  // d_k = 4, 8, ..., max_d_k only reaches max_d_k when it is a power of two.
  if ((o.max_d_k & (o.max_d_k - 1)) != 0)
    throw UsageError(fmt::format("--max-d-k must be a power of two (4, 8, ..., 8192), got {}", o.max_d_k));
  // (How much --samples and --max-d-k may ask together, q and k held at
  // once, is the run's budget's to say: estimate_run.)
}

// The run against the budget. The experiment draws --samples q and k for
// every d_k up to --max-d-k (2 x 2 x samples x max_d_k numbers in all), and
// holds the largest d_k's q and k at once: --samples 400000 took 24 s and
// 3.28 GB on an AMD EPYC core, 8 bytes a sample and dimension, plus the
// program's own 20 MB or so (64 MB counted). The
// softmax preview draws 1000 x --keys keys for every d_k, and holds those
// of the largest at once: --keys 1024 at --max-d-k 1024 is 4 GB and a
// minute, at 8192 33 GB (2.2e-8 s per key and column measured; 3e-8 here).
inline RunEstimate estimate_run(const Options& o) {
  const double d_k_sum = 2.0 * double(o.max_d_k);  // 4 + 8 + ... + max_d_k
  const double preview = double(kSoftmaxRows) * double(o.keys);
  return {0.5 + 6e-8 * 2.0 * double(o.samples) * double(o.max_d_k) + 3e-8 * preview * d_k_sum +
              1e-7 * double(o.d_model) * double(o.d_k),
          64e6 + 8.0 * double(o.samples) * double(o.max_d_k) + 4.0 * preview * double(o.max_d_k) +
              20.0 * double(o.d_model) * double(o.d_k),
          fmt::format("--samples {} --max-d-k {} --keys {}", o.samples, o.max_d_k, o.keys)};
}

// Mean and standard deviation of all entries of a matrix.
struct Spread {
  double mean, std;
};
Spread spread(const Matrix& m);

// d_k = 4, 8, ..., max_d_k: the rows of steps 4 and 6.
std::vector<int64_t> d_k_values(int64_t max_d_k);

// Step 1's result: chapter 1's running example rebuilt, its Q and K, and
// the spread of their entries (step 3 compares the scaled scores with it).
struct ExampleQK {
  std::vector<std::string> tokens;
  int64_t seq_len = 0;
  QKV qkv;
  Spread q_spread, k_spread;
};

// What steps 4 and 6 measure for the figures: step 4 the variances at each
// d_k, step 6 the softmax preview's largest weights.
struct Measured {
  std::vector<double> d_k;
  std::vector<DotStats> stats;
  std::vector<double> raw_largest, scaled_largest;  // softmax preview, mean over rows
};

// Step 5's result: the scores of kHistogramQueries random queries against
// kHistogramKeys random keys, raw (Q Kᵀ) and scaled (Q Kᵀ / sqrt(d_k)).
struct HistogramScores {
  Matrix raw, scaled;
};

// A dot product is |q| |k| cos θ: how much of a score comes from the
// lengths of the two vectors and how much from the angle between them.
struct Geometry {
  std::vector<double> cosines, scores;  // one per (query, key) pair, for the figure
  double min_lengths = 0, max_lengths = 0;  // smallest and largest |q| |k|
};

ExampleQK rebuild_q_and_k(uint64_t seed, const Options& o, const std::vector<std::string>& tokens);  // step 1
Matrix show_raw_scores(const Options& o, const ExampleQK& ex);                        // step 2: Q Kᵀ
Matrix show_scaled_scores(const Options& o, const ExampleQK& ex, const Matrix& raw);  // step 3
Measured measure_variance(uint64_t seed, const Options& o);                           // step 4
HistogramScores spread_at_d_k(uint64_t seed, int64_t hist_d_k);                       // step 5
// Step 6: the softmax preview on random rows (filling m.raw_largest and
// m.scaled_largest), then the largest weights of the running example's rows.
void softmax_preview(uint64_t seed, const Options& o, Measured& m);
void largest_weights_of_example(const Options& o, const ExampleQK& ex, const Matrix& raw, const Matrix& scaled);
Geometry show_dot_product_geometry(const QKV& qkv, const std::vector<std::string>& tokens);  // step 7

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& scaled,
                  const Measured& m, const Matrix& hist_raw, const Matrix& hist_scaled, int64_t hist_d_k,
                  const Geometry& geometry);

}  // namespace sa::ch2
