// The steps of chapter 5's program (main.cpp lists them in order). Each
// prints its shapes and values and keeps what the figures need in
// FigureData; the figures are drawn once at the end.
//   steps_causal.cpp      steps 1 to 6: the scores, the causal mask, -inf, softmax, zeroing after softmax,
//                         every head of multi-head attention
//   steps_padding.cpp     steps 7 and 8: a padded batch, padding and causal together (and --lengths)
//   steps_empty_rows.cpp  step 9: a query that may see nothing
//   steps_figures.cpp     the figures
#pragma once

#include "01-qkv-projection/qkv.hpp"
#include "03-softmax/softmax.hpp"
#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/nn.hpp"
#include "sa/print.hpp"
#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sa::ch5 {

struct Options {
  std::string text = "the cat sat on the mat";
  std::string lengths = "auto";  // auto: seq, 2/3 seq, 1/3 seq
  int64_t n_heads = 4;
  int64_t d_model = 64;
};

inline constexpr int64_t kMaxBatch = 8;   // sequences in the padded batch
// Heads in step 6's table and in multihead_causal.png: a grid of more panels
// is unreadable, and of thousands too large for gnuplot to draw.
inline constexpr int64_t kMaxHeadsShown = 16;
inline const std::string kPad = "<pad>";  // label of a padding position

// Matrices printed with up to 8 columns.
inline constexpr PrintOptions wide{.max_cols = 8};

// Throws UsageError unless every head gets the same d_k.
inline void check_heads(const Options& o) {
  if (o.d_model % o.n_heads != 0)
    throw UsageError(
        fmt::format("--d-model {} is not divisible by --n-heads {}: every head gets d_model / n_heads "
                    "columns",
                    o.d_model, o.n_heads));
}

// The lengths of the padded batch: --lengths, or for auto all, 2/3 and 1/3
// of the seq_len tokens. Throws UsageError for lengths it cannot use.
std::vector<int64_t> batch_lengths(const Options& o, int64_t seq_len);

// The run against the budget: the (d_model, d_model) projections are the
// work; at the ranges' ends 1.3 s of CPU and 330 MB (one core).
inline RunEstimate estimate_run(const Options& o) {
  const double d2 = double(o.d_model) * double(o.d_model);
  return {0.5 + 1e-7 * d2, 24.0 * d2, fmt::format("--d-model {}", o.d_model)};
}

// A mask as numbers: 1 = allowed, 0 = forbidden.
inline Matrix as_numbers(const Mask& mask) { return mask.cast<float>(); }

// "[1.0000, 0.0000, 0.0000]": one row, inline.
std::string row_str(const Matrix& m, int64_t row, int precision = 4);

// Sum of the weights strictly above the diagonal, in double.
double upper_sum(const Matrix& w);

// Labels of sequence b of the padded batch: its tokens, then <pad>.
std::vector<std::string> padded_labels(const std::vector<std::string>& tokens, int64_t length);

// Step 1: the running example, one head of width d_k = d_model.
struct Example {
  std::vector<std::string> tokens;
  int64_t seq_len = 0;
  Matrix X;                // (seq_len, d_model) = E + PE
  AttentionParams params;  // W_q, W_k, W_v, W_o
  QKV qkv;                 // Q, K, V through W_q, W_k, W_v
  Matrix scores;           // Q K^T / sqrt(d_model)
};

// Step 7: the padded batch, (batch * seq_len, d_model) rows projected to Q,
// K, V, and one padding mask per sequence.
struct PaddedBatch {
  std::vector<int64_t> lengths;
  QKV qkv;
  std::vector<Mask> masks;
};

// What the figures show, kept by the steps as they go.
struct FigureData {
  std::vector<std::string> tokens;
  Mask causal;
  Matrix masked_scores, causal_weights, bidirectional_weights;
  Tensor4 head_weights;
  int64_t d_k = 0;
  std::vector<int64_t> lengths;
  std::vector<Matrix> pad_weights, pad_causal_weights;
};

Example running_example_scores(uint64_t seed, const Options& o, const std::vector<std::string>& tokens);
Mask build_causal_mask(const Example& ex, FigureData& fig);
void mask_the_scores(const Example& ex, const Mask& causal, FigureData& fig);
Attention masked_softmax(const Example& ex, const Options& o, const Mask& causal, FigureData& fig);
Matrix zeroing_after_softmax(const Example& ex, const Mask& causal, const Matrix& weights, FigureData& fig);
void multi_head_causal(const Example& ex, const Options& o, const Mask& causal, const Matrix& weights,
                       const Matrix& bidirectional, FigureData& fig);
PaddedBatch padded_batch(const Example& ex, const Options& o, const std::vector<int64_t>& lengths, FigureData& fig);
void padding_and_causal(const Example& ex, const PaddedBatch& padded, const Mask& causal, const Attention& causal_att,
                        FigureData& fig);
void query_that_sees_nothing(const Example& ex, const Mask& causal);

void draw_figures(Figures& figures, const FigureData& d);

}  // namespace sa::ch5
