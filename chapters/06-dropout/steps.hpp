// The steps of chapter 6's program (main.cpp lists them in order). Each
// prints its shapes and values; the figures are drawn once at the end.
//   steps_draw.cpp        steps 1 to 3 and 6: the weights, one dropout draw, training against evaluation,
//                         single weights against whole rows or columns
//   steps_statistics.cpp  steps 4 and 5: many draws, the kept fraction against p
//   steps_backward.cpp    steps 7 and 8: the backward pass, the edges p = 0, p = 1 and outside [0, 1]
//   steps_figures.cpp     the figures
#pragma once

#include "01-qkv-projection/qkv.hpp"
#include "03-softmax/softmax.hpp"
#include "06-dropout/dropout.hpp"
#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sa::ch6 {

inline constexpr int64_t kDModel = 64;  // the running example of chapters 1 to 3
inline constexpr int64_t kDK = 64;
inline constexpr int64_t kSweepDraws = 1000;  // draws of the 6 x 6 weights per p in step 5

struct Options {
  double p = 0.1;  // the usual rate on attention weights (GPT-2 and BERT use it)
  int64_t draws = 100000;
};

// The run against the budget: --draws masks of the 6 x 6 weights; a
// million take 0.4 s of CPU (one core).
inline RunEstimate estimate_run(const Options& o) {
  return {0.3 + 1e-6 * double(o.draws), 64e6, fmt::format("--draws {}", o.draws)};
}

// 1/(1-p) for printing; p = 1 has no survivors to scale.
std::string scale_text(double p);

int64_t count_kept(const Mask& keep);

// Step 1: the running example's attention, rebuilt as in chapter 3.
struct Example {
  std::vector<std::string> tokens;
  int64_t seq_len = 0;
  QKV qkv;        // Q, K, V, each (seq_len, d_k)
  Attention att;  // weights = softmax(Q K^T / sqrt(d_k)), output = weights V
};

// Step 2: one dropout draw of the weights, and the generator as it was
// before it, to replay the same mask.
struct Draw {
  Generator before_draw;
  DropoutResult drop;  // output = dropout(weights), keep = the mask
  int64_t kept = 0;
};

// Step 3: the output in evaluation (weights V) and in training
// (dropout(weights) V).
struct Outputs {
  Matrix out_eval, out_train;
};

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

// Step 6: the weights with query row `query` dropped, and with key column
// `key` dropped.
struct CoarseDrops {
  int64_t query, key;
  Matrix row_dropped, col_dropped;
};

Example running_example_weights(Generator& gen);
Draw one_draw(const Example& ex, const Options& o, Generator& gen);
Outputs training_against_evaluation(const Example& ex, const Options& o, const Draw& draw);
std::vector<Checkpoint> many_draws(const Example& ex, const Options& o, Generator& many);
std::vector<SweepPoint> kept_fraction_against_p(const Example& ex, Generator& many);
CoarseDrops rows_or_columns(const Example& ex, const Options& o, const Outputs& outputs);
void backward_pass(const Example& ex, const Options& o, const Draw& draw, Generator& gen);
void the_edges(const Example& ex, uint64_t seed);

void draw_figures(Figures& figures, const Options& o, const Example& ex, const Draw& draw, const CoarseDrops& coarse,
                  const std::vector<SweepPoint>& sweep, const std::vector<Checkpoint>& curve);

}  // namespace sa::ch6
