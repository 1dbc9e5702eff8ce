// The steps of chapter 1's program (main.cpp lists them in order). Each
// prints its shapes and values; the figures are drawn after the last step.
//   steps_by_hand.cpp     steps 1 and 2: attention without weights, on six hand-written vectors
//   steps_tokens.cpp      steps 3 to 5: tokens and ids, embeddings, positional encoding
//   steps_projection.cpp  steps 6 to 9: Q, K and V, the parameters, the raw scores, the toy-size example
//   steps_positions.cpp   step 10: how the encodings of two positions relate
//   steps_path.cpp        step 11: one token's path to its attention output
//   steps_figures.cpp     the figures
#pragma once

#include "01-qkv-projection/qkv.hpp"

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/nn.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"
#include "sa/tensor.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sa::ch1 {

struct Options {
  std::string text = "the cat sat on the mat";
  int64_t d_model = 64;
  int64_t d_k = 64;
  bool plots = true;  // false under --no-plots: the steps then name no figure
};

// The run against the budget: drawing the (d_model, d_k) weights is the
// work; at the ranges' ends (4096 x 4096) 1 s of CPU and 270 MB (an AMD
// EPYC, one core), so within the budget whatever the options.
inline RunEstimate estimate_run(const Options& o) {
  return {0.5 + 1e-7 * double(o.d_model) * double(o.d_k), 20.0 * double(o.d_model) * double(o.d_k),
          fmt::format("--d-model {} --d-k {}", o.d_model, o.d_k)};
}

// How the steps print a tensor of d_model or d_k columns.
inline constexpr PrintOptions kWide{.max_cols = 8};

// Step 3's result: the text's tokens, the vocabulary (numbered by first
// appearance) and one id per token.
struct TokenIds {
  std::vector<std::string> tokens;
  Vocabulary vocab;
  std::vector<int64_t> ids;
  int64_t seq_len = 0;
};

// Step 5's result: the positional encoding PE and X = E + PE, both
// (seq_len, d_model).
struct Positioned {
  Matrix PE, X;
};

// Step 6's result: the three nn.Linear(d_model, d_k) and the Q, K, V they
// give, each (seq_len, d_k).
struct Projections {
  Linear W_q, W_k, W_v;
  QKV qkv;
};

// Step 11: one token's whole path through self-attention, with the shapes of
// this run. Which token, and the sizes, the figure needs as well.
struct TokenPath {
  int64_t t = 0;  // the token's position
  std::string word;
  int64_t id = 0, seq_len = 0, vocab = 0, d_model = 0, d_k = 0;
};

// Steps 1 and 2: step 1 prints six hand-written vectors and one query's
// context vector, every term, and returns the vectors, X (6, 3); step 2
// takes every query of that X at once.
Matrix one_query_by_hand();
void every_query_at_once(const Matrix& X_toy);

TokenIds number_tokens(const std::vector<std::string>& tokens);                             // step 3
Matrix look_up_embeddings(Generator& gen, const Options& o, const TokenIds& text);           // step 4: E
Positioned add_positional_encoding(const Options& o, const TokenIds& text, const Matrix& E);  // step 5

// Step 6 draws W_q, W_k and W_v from gen after step 4's table (PyTorch's
// order), then shows that without PE the order of the tokens is invisible.
Projections project_to_qkv(Generator& gen, const Options& o, const TokenIds& text, const Matrix& E,
                           const Positioned& pos);
// Step 7 counts the parameters; step 8 prints Q Kᵀ and returns it; step 9
// projects three hand-written tokens with weights drawn from a generator of
// its own, seeded with --seed.
void count_parameters(const Options& o, const Projections& proj, const Vocabulary& vocab);
Matrix first_look_at_scores(const Options& o, const std::vector<std::string>& tokens, const QKV& qkv);
void toy_size_example(uint64_t seed);

Matrix show_position_similarity(const Options& o, int64_t positions);  // step 10: PE · PEᵀ
TokenPath show_token_path(const Options& o, const TokenIds& text, const Matrix& E, const Positioned& pos,
                          const QKV& qkv, const Matrix& scores);  // step 11

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& scores,
                  const Matrix& similarity, const TokenPath& path);

}  // namespace sa::ch1
