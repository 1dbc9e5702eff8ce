// Chapter 1, steps 1 and 2: attention before any learned weight, one query
// by hand, then every query at once as matrices.
#include "01-qkv-projection/steps.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch1 {

namespace {

// Steps 1 and 2: attention before any learned weight, on six hand-written
// vectors of 3 numbers (one decimal each), so that every product, exp and
// sum below can be checked by hand. Each word's vector is its query, its key
// and its value at once; the two "the"s share theirs, as they share an id.
const std::vector<std::string> kToyWords{"the", "cat", "sat", "on", "the", "mat"};
Matrix toy_embeddings() {
  Matrix X(6, 3);
  X << 0.1f, 0.2f, 0.1f,  // the
      0.9f, 0.1f, 0.2f,   // cat
      0.2f, 0.8f, 0.3f,   // sat
      0.1f, 0.3f, 0.5f,   // on
      0.1f, 0.2f, 0.1f,   // the
      0.3f, 0.1f, 0.9f;   // mat
  return X;
}

// Step 1: one query's context vector, every term printed. The loops here
// only display the arithmetic; the value the step ends with is the chapter's
// context_vector(X, q), which the reader writes.
void show_one_query(const Matrix& X, const std::vector<std::string>& words, int64_t q) {
  const int64_t n = X.rows(), d = X.cols();
  auto vec = [&](int64_t row) {
    std::string s;
    for (int64_t k = 0; k < d; ++k) s += fmt::format("{}{:.1f}", k ? ", " : "", X(row, k));
    return "[" + s + "]";
  };
  fmt::print("  query {} (\"{}\"), x = {}\n", q, words[size_t(q)], vec(q));
  fmt::print("  scores: the dot product of x with every token's vector\n");
  std::vector<double> scores(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    std::string terms;
    for (int64_t k = 0; k < d; ++k) {
      terms += fmt::format("{}{:.1f}*{:.1f}", k ? " + " : "", X(q, k), X(j, k));
      scores[size_t(j)] += double(X(q, k)) * double(X(j, k));
    }
    fmt::print("    {:<4} {} = {:.2f}\n", words[size_t(j)], terms, scores[size_t(j)]);
  }
  double total = 0;
  for (double s : scores) total += std::exp(s);
  fmt::print("  weights: softmax, exp(score) / (sum of the {} exps = {:.4f})\n", n, total);
  std::vector<double> weights(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    weights[size_t(j)] = std::exp(scores[size_t(j)]) / total;
    fmt::print("    {:<4} exp({:.2f}) = {:.4f}   / {:.4f} = {:.4f}\n", words[size_t(j)], scores[size_t(j)],
               std::exp(scores[size_t(j)]), total, weights[size_t(j)]);
  }
  fmt::print("  context: the vectors, each times its weight, added up\n");
  for (int64_t j = 0; j < n; ++j)
    fmt::print("    {} {:.4f} * {}   ({})\n", j ? "+" : " ", weights[size_t(j)], vec(j), words[size_t(j)]);
  const RowVector context = context_vector(X, q);
  fmt::print("    = {}   context_vector(X, {})\n", format_row(Matrix(context)), q);
  const bool own_best = *std::max_element(scores.begin(), scores.end()) == scores[size_t(q)];
  const auto [lightest, heaviest] = std::minmax_element(weights.begin(), weights.end());
  say(fmt::format("The weights are positive and add up to 1, so the context is an average of the {} vectors, "
                  "tilted toward the ones that match \"{}\" best: the heaviest weight is {:.2f} times the "
                  "lightest, because scores this small differ little after exp.{}",
                  n, words[size_t(q)], *heaviest / *lightest,
                  own_best ? fmt::format(" Its own vector scores highest ({:.2f}): no other points as far along "
                                         "the same direction.",
                                         scores[size_t(q)])
                           : ""));
}

// Step 2: every query at once. Entry [i, j] of X Xᵀ is the score of step 1
// for query i and key j, so one product, a softmax along each row and one
// more product give every context vector; simple_attention does that.
void show_all_queries(const Matrix& X, const std::vector<std::string>& words) {
  const Matrix scores = X * X.transpose();
  print_labelled("scores = X X^T", scores, words, words, {.precision = 2});
  const SimpleAttention a = simple_attention(X);
  print_labelled("weights = softmax of each row", a.weights, words, words);
  print_labelled("context = weights X", a.context, words, {"x0", "x1", "x2"},
                 {.axes = "(rows: queries, columns: the 3 numbers)"});
  double worst = 0;
  for (int64_t i = 0; i < X.rows(); ++i)
    worst = std::max(worst, double((a.context.row(i) - context_vector(X, i)).cwiseAbs().maxCoeff()));
  fmt::print("  row i of the context against context_vector(X, i), for every i: largest difference {}\n",
             rounding(worst, rounding_bound(X.cwiseAbs().maxCoeff())));
  fmt::print("  rows 0 and 4 ('the') of the context are identical: {}\n",
             a.context.row(0) == a.context.row(4) ? "yes" : "no");
  // Which key each query weighs most: its own vector only when no other is
  // longer in its direction (x . y <= |x| |y|, and x . x = |x|^2).
  std::string favourites, others;
  int64_t own = 0;
  for (int64_t i = 0; i < X.rows(); ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < X.rows(); ++j)
      if (a.weights(i, j) > a.weights(i, best)) best = j;
    const std::string &word = words[size_t(i)], &favourite = words[size_t(best)];
    favourites += fmt::format("{}{} -> {}", i ? ", " : "", word, favourite);
    if (favourite == word) {
      ++own;
    } else if (others.find(fmt::format("\"{}\" ", word)) == std::string::npos) {  // a repeated word once
      others += fmt::format("{}\"{}\" to \"{}\"", others.empty() ? "" : ", ", word, favourite);
    }
  }
  fmt::print("  each query's largest weight: {}\n", favourites);
  say(fmt::format(
      "The matrix form gives the same numbers as the loops, for every query at once. Without learned weights a "
      "score only measures how two vectors overlap, so {} of the {} queries weigh their own word most{}. Nothing "
      "says what a word should look for, and one vector plays three roles: what the token looks for, what it is "
      "matched on and what it hands over. The learned projections W_q, W_k and W_v of step 6 give each role its "
      "own vector, so a word can look for something other than itself. The two \"the\"s get the same context: "
      "same vector in, same vector out, until step 5's positional encoding tells them apart.",
      own, X.rows(),
      others.empty() ? "" : fmt::format("; the others go to a longer vector in a similar direction ({})", others)));
}

}  // namespace

Matrix one_query_by_hand() {
  const Matrix X_toy = toy_embeddings();
  say("Before Q, K and V, the idea itself. Six vectors of 3 numbers, one per word of \"the cat sat on the mat\", "
      "written by hand so that every sum below can be checked on paper. Each word's vector is its query, its key "
      "and its value at once.");
  print_labelled("X", X_toy, kToyWords, {"x0", "x1", "x2"},
                 {.precision = 1, .axes = "(rows: tokens, columns: the 3 numbers of each)"});
  show_one_query(X_toy, kToyWords, 2);
  return X_toy;
}

void every_query_at_once(const Matrix& X_toy) { show_all_queries(X_toy, kToyWords); }

}  // namespace sa::ch1
