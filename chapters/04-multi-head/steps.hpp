// The steps of chapter 4's program (main.cpp lists them in order). Each
// prints its shapes and values; the figures are drawn once at the end.
//   steps_split.cpp    steps 1 to 3: the input and the four layers, Q, K and V, the split into heads
//   steps_heads.cpp    steps 4 to 9: scores, weights and outputs per head, combine, W_o, all in one call
//   steps_reading.cpp  steps 10 to 12: what each head does, the parameter count, the einsum reading
//   steps_beyond.cpp   steps 13 and 14: cross-attention and a batch of sequences
//   steps_figures.cpp  the figures
#pragma once

#include "01-qkv-projection/qkv.hpp"
#include "04-multi-head/multihead.hpp"
#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/nn.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace sa::ch4 {

struct Options {
  std::string text = "the cat sat on the mat";
  int64_t d_model = 64;
  int64_t n_heads = 4;
  int64_t batch = 2;
};

// The chapter's cross-attention example: a decoder's 10 positions looking at an
// encoder's 50.
inline constexpr int64_t kCrossQueries = 10;
inline constexpr int64_t kCrossKeys = 50;
// A grid of more heatmaps than this is unreadable; the figure shows the first ones.
inline constexpr int64_t kMaxPanels = 16;

// Matrices printed with up to 8 columns.
inline constexpr PrintOptions wide{.max_cols = 8};

// Throws UsageError unless every head gets the same d_k.
inline void check_heads(const Options& o) {
  if (o.d_model % o.n_heads != 0)
    throw UsageError(fmt::format("--d-model {} is not divisible by --n-heads {}: every head needs the same "
                                 "d_k = d_model / n_heads",
                                 o.d_model, o.n_heads));
}

// The run against the budget, for a sentence of `seq_len` words: the four
// (d_model, d_model) projections, 3.7 s of CPU and 390 MB at d_model 4096
// (one core); and the last step's batch, whose weights are (batch, n_heads,
// seq_len, seq_len): 64 sequences of 64 words in 4096 heads peaked at
// 5.5 GB (6 bytes a weight) and 13 s, where the projections alone had been
// estimated, within the budget.
inline RunEstimate estimate_run(const Options& o, int64_t seq_len) {
  const double d2 = double(o.d_model) * double(o.d_model);
  const double weights = double(o.batch) * double(o.n_heads) * double(seq_len) * double(seq_len);
  return {0.5 + 2e-7 * d2 + 7e-9 * weights, 24.0 * d2 + 6.0 * weights,
          fmt::format("--d-model {} --n-heads {} --batch {} over {} words", o.d_model, o.n_heads, o.batch, seq_len)};
}

// Step 1: the sentence, its sizes, X = E + PE and the four layers every
// later step uses.
struct Input {
  std::vector<std::string> tokens;
  int64_t seq_len = 0, d_model = 0, n_heads = 0, d_k = 0;
  Matrix X;                // (seq_len, d_model)
  AttentionParams params;  // W_q, W_k, W_v, W_o
};

// Step 3: Q, K and V split into heads, each (1, n_heads, seq_len, d_k).
struct Heads {
  Tensor4 Q_h, K_h, V_h;
};

// The few numbers steps 3, 6 and 7 print side by side: `show` features of
// head h1, row r2, which sit from column c0 on in the unsplit Q.
struct Element {
  int64_t h1, r2, show, c0;
};
inline Element example_element(const Input& in) {
  // The example element: head 1 (or 0), row 2 (or the last), 4 features.
  const int64_t h1 = std::min<int64_t>(1, in.n_heads - 1), r2 = std::min<int64_t>(2, in.seq_len - 1);
  const int64_t show = std::min<int64_t>(4, in.d_k), c0 = h1 * in.d_k;
  return {h1, r2, show, c0};
}

// What the heads of one attention look like, for the table and the bars.
struct HeadStats {
  double mean_entropy, min_entropy, max_entropy, focus;
  int64_t top_query, top_key;
  double top_weight;
};
HeadStats head_stats(const Matrix& w);

// "  Q[0, 2, 16:20]               = [...]   note", labels aligned.
void values_line(const std::string& label, const float* p, int64_t n, const std::string& note);
const char* yes_no(bool b);

Input input_and_layers(Generator& gen, const Options& o, const std::vector<std::string>& tokens);
QKV project_once(const Input& in);
Heads split_into_heads(const Input& in, const QKV& qkv);
Tensor4 scores_per_head(const Input& in, const Heads& heads);
Tensor4 weights_per_head(const Input& in, const Tensor4& scores);
Tensor4 outputs_per_head(const Input& in, const Heads& heads, const Tensor4& weights);
Matrix combine(const Input& in, const QKV& qkv, const Heads& heads, const Tensor4& head_out);
Matrix output_projection(const Input& in, const Matrix& combined);
MultiHead in_one_call(const Input& in, const Tensor4& weights, const Matrix& output);
std::vector<HeadStats> what_each_head_does(const Input& in, const QKV& qkv, const MultiHead& mh);
void count_parameters(const Input& in);
void einsum_reading(const Input& in, const QKV& qkv, const Tensor4& scores, const Tensor4& head_out,
                    const Matrix& output);
MultiHead cross_attention(Generator& gen, const Input& in);
void batch_of_sequences(Generator& gen, const Input& in, const Options& o, const MultiHead& mh);

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Tensor4& weights,
                  const std::vector<HeadStats>& stats, const Tensor4& cross_weights);

}  // namespace sa::ch4
