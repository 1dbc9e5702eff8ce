// The steps of chapter 3's program (main.cpp lists them in order). Each
// prints its shapes and values; the figures are drawn after the last step.
//   steps_attention.cpp  steps 1 to 4: the running example's scores, softmax, weights times values, attention()
//   steps_softmax.cpp    steps 5 and 6: why softmax subtracts the row maximum, temperature
//   steps_gradient.cpp   steps 7 and 8: softmax's Jacobian and backward, chapter 2's vanishing gradient
//   steps_weights.cpp    steps 9 to 11: the wrong way to mask, entropy and focus, attention without softmax
//   steps_figures.cpp    the figures
#pragma once

#include "01-qkv-projection/qkv.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace sa::ch3 {

struct Options {
  std::string text = "the cat sat on the mat";
  int64_t d_model = 64;
  int64_t d_k = 64;
  double temperature = 1.0;
  int64_t samples = 2000;
};

// The row the temperature and stability steps play with, and the rows of
// the vanishing-gradient experiment.
inline const std::vector<float> kTemperatureRow{2.0f, 1.0f, 0.5f, 0.0f, -1.0f, -2.0f};
inline const std::vector<double> kTemperatures{0.25, 0.5, 1.0, 2.0, 5.0};
inline constexpr int64_t kKeys = 6;  // as many keys as the running example, and chapter 2's preview
inline constexpr double kDead = 0.01;  // a Jacobian this small passes almost no gradient

// Throws UsageError when --temperature is too small for the steps' rows.
inline void check_options(const Options& o) {
  // x / T must stay a float: T below ~6e-39 turns the row's 2.0 into +inf.
  for (float x : kTemperatureRow)
    if (!std::isfinite(x / float(o.temperature)) || float(o.temperature) == 0.0f)
      throw UsageError(fmt::format("--temperature {} is too small: x / T overflows float32", o.temperature));
}

// The run against the budget: step 8 draws a query and 6 keys for each of
// --samples rows at 9 values of d_k, 0.21 ms a row on one core (4.1 s for
// 20,000); 1,000,000 rows take about 3.5 minutes.
inline RunEstimate estimate_run(const Options& o) {
  return {0.5 + 2.5e-4 * double(o.samples) + 1e-7 * double(o.d_model) * double(o.d_k),
          64e6 + 20.0 * double(o.d_model) * double(o.d_k), fmt::format("--samples {}", o.samples)};
}

// A (1, n) matrix holding `values`: one row of scores.
Matrix row_matrix(const std::vector<float>& values);

// Step 1's result: chapter 1's running example rebuilt, its Q, K and V, and
// the scaled scores Q K^T / sqrt(d_k), (seq_len, seq_len).
struct ExampleScores {
  std::vector<std::string> tokens;
  int64_t seq_len = 0;
  QKV qkv;
  Matrix scores;
};

// One row of step 8's table, for one d_k: the mean over --samples rows.
struct NormRow {
  int64_t d_k;
  double score_std;              // of the unscaled q.k (chapter 2: sqrt(d_k))
  double raw_norm, scaled_norm;  // mean ||J||_F
  double raw_dead, scaled_dead;  // share of rows with ||J||_F < kDead
  double raw_max, scaled_max;    // mean largest weight
};

// Steps 1 to 4 on the running example: its scaled scores, their softmax
// (the weights), weights times V (the output), then attention() itself.
ExampleScores scores_of_example(uint64_t seed, const Options& o, const std::vector<std::string>& tokens);
Matrix softmax_of_scores(const ExampleScores& ex);
Matrix weights_times_values(const Options& o, const ExampleScores& ex, const Matrix& weights);
void attention_in_one_call(const ExampleScores& ex, const Matrix& weights, const Matrix& output);

// Steps 5 to 8 on softmax itself. Step 6 returns the temperatures it shows
// (kTemperatures and --temperature), step 8 its table.
void subtract_the_maximum();
std::vector<double> show_temperatures(const Options& o);
void softmax_gradient();
std::vector<NormRow> vanishing_gradient(uint64_t seed, const Options& o);

// Steps 9 to 11. Step 10 returns the entropy of each row of the weights.
void zero_after_softmax(const ExampleScores& ex, const Matrix& weights);
std::vector<double> entropy_and_focus(const ExampleScores& ex, const Matrix& weights);
void show_without_softmax(uint64_t seed);

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& weights,
                  const std::vector<double>& entropy, const std::vector<double>& temperatures,
                  const std::vector<NormRow>& norms);

}  // namespace sa::ch3
