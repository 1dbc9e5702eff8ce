// Chapter 1: from words to queries, keys and values.
//
// Starts with attention before any learned weight (six hand-written
// 3-number vectors, one query by hand, then all queries as matrices), then
// walks "the cat sat on the mat" through tokens -> ids -> embeddings ->
// + positional encoding -> Q, K, V, printing every shape and value, then
// the tutorial's small d_model 8 example, the parameter count, a first look
// at the raw scores Q Kᵀ that chapter 2 will scale, how positions relate,
// and last one token's whole path to its attention output, as text and as
// a diagram (qkv_flow.png).
#include "01-qkv-projection/qkv.hpp"

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

using namespace sa;

namespace {

struct Options {
  std::string text = "the cat sat on the mat";
  int64_t d_model = 64;
  int64_t d_k = 64;
};

// What step 3 can say about this text's repeated words: computed from the
// input, since the default sentence's two "the"s are not every sentence's.
void say_about_repeats(const Vocabulary& vocab, const std::vector<std::string>& tokens,
                       const std::vector<int64_t>& ids) {
  std::vector<int64_t> count(size_t(vocab.size()), 0);
  for (int64_t id : ids) ++count[size_t(id)];
  std::string repeated;
  int64_t kinds = 0;
  for (int64_t id = 0; id < vocab.size(); ++id)
    if (count[size_t(id)] > 1) {
      repeated += fmt::format("{}'{}' ({} times)", kinds++ ? ", " : "", vocab.word(id), count[size_t(id)]);
    }
  if (tokens.size() == 1) {
    say("One word, one id. A repeated word would get the same id each time, and nothing so far could tell its "
        "occurrences apart.");
  } else if (kinds == 0) {
    say(fmt::format("Every word of this text appears once, so the {} ids all differ. A repeated word would get "
                    "the same id each time, and nothing so far could tell its occurrences apart.",
                    tokens.size()));
  } else {
    say(fmt::format("Repeated: {}. A repeated word gets the same id every time, so nothing so far tells its "
                    "occurrences apart.",
                    repeated));
  }
}

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

// Step 6's coda: a projection works row by row, so reordering the tokens
// only reorders the rows of Q, unless the positional encoding (added by
// position, not by token) is part of X. Attention compares rows with rows,
// so without it the order of the words would be invisible.
void show_order_blindness(const std::vector<std::string>& tokens, const Matrix& E, const Matrix& PE,
                          const Linear& W_q) {
  const int64_t n = E.rows();
  // The new order: the first token moved to the end.
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = (i + 1) % n;
  Matrix E_moved(n, E.cols());
  std::vector<std::string> moved_tokens;
  for (int64_t i = 0; i < n; ++i) {
    E_moved.row(i) = E.row(order[size_t(i)]);
    moved_tokens.push_back(tokens[size_t(order[size_t(i)])]);
  }
  if (moved_tokens == tokens) {
    say("Moving the first token to the end gives this same text again, so there is no other order to compare "
        "with here (try a text with two different words).");
    return;
  }
  auto reorder_rows = [&](const Matrix& M) {
    Matrix R(M.rows(), M.cols());
    for (int64_t i = 0; i < n; ++i) R.row(i) = M.row(order[size_t(i)]);
    return R;
  };
  const Matrix Q_plain = linear(E, W_q);
  const double without_pe = (linear(E_moved, W_q) - reorder_rows(Q_plain)).cwiseAbs().maxCoeff();
  const double with_pe = (linear(E_moved + PE, W_q) - reorder_rows(linear(E + PE, W_q))).cwiseAbs().maxCoeff();
  fmt::print("  Another order, the first token moved to the end: \"{}\"\n", fmt::join(moved_tokens, " "));
  fmt::print("    without positional encoding: its Q is the old Q with rows reordered "
             "(up to float rounding: largest difference {})\n",
             rounding(without_pe, rounding_bound(Q_plain.cwiseAbs().maxCoeff())));
  fmt::print("    with positional encoding:    its Q differs from the reordered old Q by up to {:.4f}\n", with_pe);
  say("Attention only compares rows with rows, so without the positional encoding it could not tell the two "
      "orders apart: permuting the tokens would just permute its output the same way.");
}

// PE(p + k) from PE(p) for every p, with one fixed matrix: each (sin, cos)
// pair of frequency w turns by the angle w·k,
//   sin(w(p + k)) =  sin(wp) cos(wk) + cos(wp) sin(wk)
//   cos(w(p + k)) = -sin(wp) sin(wk) + cos(wp) cos(wk),
// so M_k is block diagonal with one 2 x 2 rotation per pair, and
// PE(p + k) = PE(p) M_k (rows are positions). With an odd d_model the last
// column is a sine without its cosine; M_k leaves it as it is (0 on the
// diagonal would be as wrong): no fixed linear map can advance it.
Matrix offset_map(int64_t d_model, int64_t k) {
  Matrix M = Matrix::Zero(d_model, d_model);
  for (int64_t j = 0; j + 1 < d_model; j += 2) {
    const double w = 1.0 / std::pow(10000.0, double(j) / double(d_model));
    const float c = float(std::cos(w * double(k))), s = float(std::sin(w * double(k)));
    M(j, j) = c;       // new sin gets  sin(wp) cos(wk)
    M(j + 1, j) = s;   //             + cos(wp) sin(wk)
    M(j, j + 1) = -s;  // new cos gets -sin(wp) sin(wk)
    M(j + 1, j + 1) = c;  //           + cos(wp) cos(wk)
  }
  if (d_model % 2 == 1) M(d_model - 1, d_model - 1) = 1.0f;
  return M;
}

// Step 10: how the encodings of two positions relate. Returns PE · PEᵀ over
// `positions` positions for the figure.
Matrix show_position_similarity(const Options& o, int64_t positions) {
  const Matrix PE = positional_encoding(positions, o.d_model);
  const Matrix S = PE * PE.transpose();  // S[p, q] = PE(p) . PE(q)
  const int64_t pairs = o.d_model / 2;  // (sin, cos) pairs; an odd d_model ends with a lone sine
  say(fmt::format("The dot product of two positions' encodings, PE(p) . PE(q), over {} positions with d_model {}. "
                  "Each (sin, cos) pair of frequency w adds sin(wp) sin(wq) + cos(wp) cos(wq) = cos(w (p - q)), "
                  "which depends on the offset p - q only, not on where the two positions are{}.",
                  positions, o.d_model,
                  pairs == 0 ? "; with d_model 1 there is no pair, only one sine column"
                  : o.d_model % 2 == 1 ? fmt::format(" (here {} pairs and one lone sine)", pairs)
                                       : fmt::format(" (here {} pairs)", pairs)));
  const int64_t shown = std::min<int64_t>(8, positions);
  std::vector<std::string> labels;
  for (int64_t p = 0; p < shown; ++p) labels.push_back(std::to_string(p));
  print_labelled("PE PE^T, first positions", S.topLeftCorner(shown, shown), labels, labels,
                 {.precision = 2, .axes = "(rows: position p, columns: position q)"}, {positions, positions});
  // The same offset gives the same number wherever it sits (measured over
  // every pair p, p + k of the positions).
  double worst = 0;
  for (int64_t k = 0; k < positions; ++k)
    for (int64_t p = 0; p + k < positions; ++p) worst = std::max(worst, double(std::abs(S(p, p + k) - S(0, k))));
  std::string by_offset;
  for (int64_t k : {0, 1, 2, 4, 8, 16, 32})
    if (k < positions) by_offset += fmt::format("{}k = {}: {:.2f}", by_offset.empty() ? "" : ", ", k, S(0, k));
  fmt::print("  by offset: {}\n", by_offset);
  // An odd d_model's lone sine makes the difference real, so it is printed
  // as a number; otherwise it is rounding in sums of d_model terms of size 1.
  if (o.d_model % 2 == 1)
    fmt::print("  largest |PE(p) . PE(p + k) - PE(0) . PE(k)| over all p, k: {:.1e} (d_model is odd: the last column, "
               "a sine without its cosine, adds sin(wp) sin(wq), which is not a function of p - q)\n",
               worst);
  else
    fmt::print("  largest |PE(p) . PE(p + k) - PE(0) . PE(k)| over all p, k: {} (float32 rounding)\n",
               rounding(worst, rounding_bound(double(o.d_model))));
  if (pairs > 0)
    say(fmt::format("At offset 0 every pair adds cos 0 = 1, the largest a cosine can be: PE(0) . PE(0) = {:.2f}, one "
                    "per pair{}.{}",
                    S(0, 0),
                    o.d_model % 2 == 1 ? " (the lone sine is 0 at position 0; elsewhere it adds up to 1 more)" : "",
                    pairs >= 8 ? " Nearby positions stay close to it; further away the fast pairs cancel out and "
                                 "the sum falls, with ripples where some frequencies come back in phase: the band "
                                 "along the diagonal of pe_similarity.png."
                               : ""));
  // The relative-offset property: one matrix per k moves every position.
  if (pairs == 0) {
    say("With no (sin, cos) pair there is no fixed map from PE(p) to PE(p + k) either: sin(w (p + k)) needs "
        "cos(wp), which this encoding does not hold.");
    return S;
  }
  std::string moved;
  for (int64_t k : {1, 5, 10}) {
    if (k >= positions) continue;
    const Matrix M = offset_map(o.d_model, k);
    const int64_t pairs = o.d_model - o.d_model % 2;  // the columns M advances
    const Matrix moved_pe = PE.topRows(positions - k) * M;
    const float err = pairs == 0 ? 0.0f
                                 : (moved_pe.leftCols(pairs) - PE.bottomRows(positions - k).leftCols(pairs))
                                       .cwiseAbs()
                                       .maxCoeff();
    moved += fmt::format("{}k = {}: {}", moved.empty() ? "" : ", ", k, rounding(err, 1e-6));
  }
  say(fmt::format("PE(p + k) is a fixed linear map of PE(p), the same for every p: M_k turns each (sin, cos) pair "
                  "by the angle w k. Largest |PE(p) M_k - PE(p + k)| over every p{}: {}.",
                  o.d_model % 2 == 1 ? " (on the paired columns; the lone last sine has no such map)" : "", moved));
  return S;
}

// Step 11: one token's whole path through self-attention, with the shapes of
// this run. Which token, and the sizes, the figure needs as well.
struct TokenPath {
  int64_t t = 0;  // the token's position
  std::string word;
  int64_t id = 0, seq_len = 0, vocab = 0, d_model = 0, d_k = 0;
};

// The first three values of row `row` of m, with "..." when there are more.
std::string first_values(const Matrix& m, int64_t row) {
  const int64_t n = std::min<int64_t>(3, m.cols());
  std::string s = format_row(Matrix(m.row(row).head(n)));
  if (m.cols() > n) s.insert(s.size() - 1, ", ...");
  return s;
}

// Prints the path of the last token, reusing the rows steps 4 to 8
// computed. Scaling, softmax and weights V are chapters 2 and 3, whose
// library this program does not link; their formulas are short enough to
// apply here to one row, in double.
TokenPath show_token_path(const Options& o, const std::vector<std::string>& tokens, const std::vector<int64_t>& ids,
                          int64_t vocab, const Matrix& E, const Matrix& PE, const Matrix& X, const QKV& qkv,
                          const Matrix& scores) {
  const int64_t seq_len = int64_t(tokens.size());
  const TokenPath p{seq_len - 1, tokens.back(), ids.back(), seq_len, vocab, o.d_model, o.d_k};
  say(fmt::format("Every token takes the same path, each with its own rows. Here is the last one, \"{}\" at "
                  "position {}, with the shapes of this run. Up to q, k and v the path uses this token alone. {}",
                  p.word, p.t,
                  seq_len == 1 ? "Then its q meets the only key there is, its own, so its scores and weights have "
                                 "a single entry: seq_len = 1."
                               : fmt::format("Then its q meets the keys of {} tokens, so its scores and weights "
                                             "have one entry per token: seq_len = {}.",
                                             seq_len == 2 ? "both" : fmt::format("all {}", seq_len), seq_len)));
  const double scale = std::sqrt(double(o.d_k));
  Eigen::RowVectorXd scaled = scores.row(p.t).cast<double>() / scale;
  Eigen::RowVectorXd weights = (scaled.array() - scaled.maxCoeff()).exp();  // max first: no overflow
  weights /= weights.sum();
  const Eigen::RowVectorXd output = weights * qkv.V.cast<double>();

  struct Line {
    std::string name, shape, via, values;
  };
  auto shape = [](int64_t rows, int64_t cols) { return shape_str(Shape{rows, cols}); };
  const std::string pe_row = fmt::format("PE[{}]", p.t);
  const std::vector<Line> here{
      {fmt::format("e = table[{}]", p.id), shape(1, o.d_model), "table " + shape(vocab, o.d_model),
       first_values(E, p.t)},
      {pe_row, shape(1, o.d_model), "PE " + shape(seq_len, o.d_model), first_values(PE, p.t)},
      {"x = e + " + pe_row, shape(1, o.d_model), "", first_values(X, p.t)},
      {"q = x W_q + b_q", shape(1, o.d_k), "W_q " + shape(o.d_model, o.d_k), first_values(qkv.Q, p.t)},
      {"k = x W_k + b_k", shape(1, o.d_k), "W_k " + shape(o.d_model, o.d_k), first_values(qkv.K, p.t)},
      {"v = x W_v + b_v", shape(1, o.d_k), "W_v " + shape(o.d_model, o.d_k), first_values(qkv.V, p.t)},
      {"scores = q K^T", shape(1, seq_len), "K^T " + shape(o.d_k, seq_len), first_values(scores, p.t)}};
  const std::vector<Line> later{
      {"scores / sqrt(d_k)", shape(1, seq_len), fmt::format("sqrt({}) = {:.4g}", o.d_k, scale),
       first_values(Matrix(scaled.cast<float>()), 0)},
      {"weights = softmax", shape(1, seq_len), fmt::format("over {} key{}", seq_len, seq_len == 1 ? "" : "s"),
       first_values(Matrix(weights.cast<float>()), 0)},
      {"output = weights V", shape(1, o.d_k), "V " + shape(seq_len, o.d_k),
       first_values(Matrix(output.cast<float>()), 0)}};
  size_t name_w = 0, shape_w = 0, via_w = 0;
  for (const auto* lines : {&here, &later})
    for (const Line& l : *lines) {
      name_w = std::max(name_w, l.name.size());
      shape_w = std::max(shape_w, l.shape.size());
      via_w = std::max(via_w, l.via.size());
    }
  auto print_lines = [&](const std::vector<Line>& lines) {
    for (const Line& l : lines)
      fmt::print("    {:<{}}  {:<{}}  {:<{}}  {}\n", l.name, name_w, l.shape, shape_w, l.via, via_w, l.values);
  };
  fmt::print("  \"{}\": position {}, id {}\n", p.word, p.t, p.id);
  fmt::print("  in this chapter (row {} of E, PE, X, Q, K, V and the scores above):\n", p.t);
  print_lines(here);
  fmt::print("  in chapters 2 and 3 (computed here from their formulas):\n");
  print_lines(later);
  const std::string width = o.d_k == 1 ? "1 number" : fmt::format("{} numbers", o.d_k);
  say(seq_len == 1 ? fmt::format("The one weight is 1, so the output is v itself: {}. The figure qkv_flow.png "
                                 "draws the same path.",
                                 width)
                   : fmt::format("The weights add up to {:.4f}, and the output mixes the {} rows of V with them: "
                                 "{}, as wide as v. The figure qkv_flow.png draws the same path.",
                                 weights.sum(), seq_len, width));
  return p;
}

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& scores,
                  const Matrix& similarity, const TokenPath& path) {
  // Six positions make a dull picture of the encoding; 64 show its waves.
  const int64_t positions = 64;
  const Matrix PE = positional_encoding(positions, o.d_model);
  figures.draw("positional_encoding.png", [&](const std::string& path) {
    plot::Heatmap h;
    h.title = fmt::format("Sinusoidal positional encoding, {} positions x d_model {}", positions, o.d_model);
    h.values = PE;
    h.xlabel = "dimension j (even: sin, odd: cos)";
    h.ylabel = "position";
    h.cblabel = "PE[pos, j]";
    h.diverging = true;
    h.vmin = -1;
    h.vmax = 1;
    h.annotate = false;
    return plot::heatmap(path, h, 900, 750);
  });

  figures.draw("positional_waves.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "A few columns of the positional encoding: fast waves first, slow waves later";
    p.xlabel = "position";
    p.ylabel = "PE[pos, j]";
    for (int64_t j : {int64_t(6), int64_t(7), o.d_model / 4, o.d_model / 2}) {
      if (j >= o.d_model) continue;
      plot::Series s;
      s.name = fmt::format("j = {} ({})", j, j % 2 == 0 ? "sin" : "cos");
      s.style = plot::Series::Style::Lines;
      for (int64_t pos = 0; pos < positions; ++pos) {
        s.x.push_back(double(pos));
        s.y.push_back(PE(pos, j));
      }
      p.series.push_back(s);
    }
    p.ymin = -1.15;
    p.ymax = 1.15;
    return plot::lines(path, p);
  });

  figures.draw("pe_similarity.png", [&](const std::string& path) {
    plot::Heatmap h;
    h.title = fmt::format("PE(p) . PE(q) over {} positions, d_model {}{}", similarity.rows(), o.d_model,
                          o.d_model % 2 == 0 ? ": constant along each diagonal (offset p - q)" : "");
    h.values = similarity;
    h.xlabel = "position q";
    h.ylabel = "position p";
    h.cblabel = "PE(p) . PE(q)";
    // Negative dot products only appear with few pairs (d_model 2: cos k);
    // then the diverging palette shows the sign, otherwise a plain one the range.
    h.diverging = similarity.minCoeff() < 0;
    h.annotate = false;
    return plot::heatmap(path, h, 900, 750);
  });

  figures.draw("raw_scores.png", [&](const std::string& path) {
    plot::Heatmap h;
    h.title = fmt::format("Raw scores Q K^T (not yet scaled), d_k = {}", o.d_k);
    h.values = scores;
    h.row_labels = tokens;
    h.col_labels = tokens;
    h.cblabel = "q . k";
    h.diverging = true;
    h.decimals = 1;
    return plot::heatmap(path, h);
  });

  figures.draw("qkv_flow.png", [&](const std::string& file) {
    const TokenPath& p = path;
    auto shape = [](int64_t rows, int64_t cols) { return shape_str(Shape{rows, cols}); };
    plot::Diagram d;
    d.title = fmt::format("One token's path through self-attention: \"{}\" at position {} ({}), d_model {}, d_k {}",
                          p.word, p.t, p.seq_len == 1 ? "the only one" : "the last", p.d_model, p.d_k);
    // Chapter 1's tensors in colour 0, what chapters 2 and 3 add in colour 1.
    auto box = [&](std::string name, std::vector<std::string> lines, int column, int row, std::size_t colour = 0) {
      d.boxes.push_back({std::move(name), std::move(lines), column, row, colour});
      return d.boxes.size() - 1;
    };
    auto arrow = [&](std::size_t from, std::size_t to, std::string label) {
      d.arrows.push_back({from, to, std::move(label)});
    };
    // Row 0 takes the word to x, and q, k and v fan out below it. Each lane
    // goes down: K joins the scores from the side, and the bottom row runs
    // from the scaled scores to the output, which V joins from above.
    const auto word = box(fmt::format("\"{}\"", p.word), {fmt::format("position {}, id {}", p.t, p.id)}, 0, 0);
    const auto e = box(fmt::format("e = table[{}]", p.id), {shape(1, p.d_model)}, 1, 0);
    const auto x = box(fmt::format("x = e + PE[{}]", p.t), {shape(1, p.d_model)}, 2, 0);
    const auto pe = box(fmt::format("PE[{}]", p.t), {shape(1, p.d_model), fmt::format("position {}", p.t)}, 3, 0);
    const auto q = box("q", {shape(1, p.d_k)}, 1, 1);
    const auto k = box("k", {shape(1, p.d_k)}, 2, 1);
    const auto v = box("v", {shape(1, p.d_k)}, 3, 1);
    const auto s = box("scores = q K^T", {shape(1, p.seq_len)}, 1, 2);
    const auto K = box("K", {shape(p.seq_len, p.d_k), "one row per token"}, 2, 2);
    const auto V = box("V", {shape(p.seq_len, p.d_k), "one row per token"}, 3, 2);
    const auto scaled = box("scaled scores", {shape(1, p.seq_len), "chapter 2"}, 1, 3, 1);
    const auto w = box("weights", {shape(1, p.seq_len), "chapter 3"}, 2, 3, 1);
    const auto out = box("output", {shape(1, p.d_k), "chapter 3"}, 3, 3, 1);
    arrow(word, e, fmt::format("row {} of\ntable {}", p.id, shape(p.vocab, p.d_model)));
    arrow(e, x, "+");
    arrow(pe, x, "+");
    const struct {
      std::size_t to;
      const char *W, *b;
    } projections[] = {{q, "W_q", "b_q"}, {k, "W_k", "b_k"}, {v, "W_v", "b_v"}};
    for (const auto& [to, W, b] : projections)
      arrow(x, to, fmt::format("× {} + {}\n{} {}", W, b, W, shape(p.d_model, p.d_k)));
    arrow(k, K, fmt::format("row {} of K", p.t));
    arrow(v, V, fmt::format("row {} of V", p.t));
    arrow(q, s, "× K^T");
    arrow(K, s, "K^T " + shape(p.d_k, p.seq_len));
    arrow(s, scaled, fmt::format("/ sqrt({})", p.d_k));
    arrow(scaled, w, "softmax");
    arrow(w, out, "× V");
    arrow(V, out, "V " + shape(p.seq_len, p.d_k));
    d.legend = {"chapter 1 computes these", "chapters 2 and 3 add these"};
    return plot::diagram(file, d);
  });
}

void run(int argc, char** argv) {
  Options o;
  Cli cli("01-qkv-projection",
          "Chapter 1: turn a sentence into token ids, embeddings with positional encoding, and the "
          "queries, keys and values of self-attention, printing every shape and value.");
  cli.add("--text", &o.text, "the sentence to encode (words split on spaces, at most 64 words)");
  cli.add("--d-model", &o.d_model, "width of a token vector", IntRange{1, 4096});
  cli.add("--d-k", &o.d_k, "width of a query/key/value vector", IntRange{1, 4096});
  cli.parse(argc, argv);
  const auto tokens = tokenize_text(o.text);  // refuses an empty text before anything prints
  // The run against the budget: drawing the (d_model, d_k) weights is the
  // work; at the ranges' ends (4096 x 4096) 1 s of CPU and 270 MB (an AMD
  // EPYC, one core), so within the budget whatever the options.
  cli.check_budget({0.5 + 1e-7 * double(o.d_model) * double(o.d_k), 20.0 * double(o.d_model) * double(o.d_k),
                    fmt::format("--d-model {} --d-k {}", o.d_model, o.d_k)});

  Generator gen(cli.seed);
  Figures figures(cli);
  const PrintOptions wide{.max_cols = 8};

  chapter_title("Chapter 1: from words to queries, keys and values");
  fmt::print("text \"{}\", d_model {}, d_k {}, seed {}\n", o.text, o.d_model, o.d_k, cli.seed);

  // ---------------------------------------------------------------------
  step(1, "Attention without weights: one query, by hand");
  const Matrix X_toy = toy_embeddings();
  say("Before Q, K and V, the idea itself. Six vectors of 3 numbers, one per word of \"the cat sat on the mat\", "
      "written by hand so that every sum below can be checked on paper. Each word's vector is its query, its key "
      "and its value at once.");
  print_labelled("X", X_toy, kToyWords, {"x0", "x1", "x2"},
                 {.precision = 1, .axes = "(rows: tokens, columns: the 3 numbers of each)"});
  show_one_query(X_toy, kToyWords, 2);

  // ---------------------------------------------------------------------
  step(2, "Attention without weights: every query at once, as matrices");
  show_all_queries(X_toy, kToyWords);

  // ---------------------------------------------------------------------
  step(3, "Split the text into tokens and number them");
  const Vocabulary vocab(tokens);
  const auto ids = vocab.ids(tokens);
  const int64_t seq_len = int64_t(tokens.size());
  fmt::print("  tokens      {}\n", tokens);
  std::string vocab_line;
  for (int64_t i = 0; i < vocab.size(); ++i) vocab_line += fmt::format("{}{}={}", i ? "  " : "", vocab.word(i), i);
  fmt::print("  vocabulary  {}   ({} word{}, numbered by first appearance)\n", vocab_line, vocab.size(),
             vocab.size() == 1 ? "" : "s");
  print_shape("token_ids", {1, seq_len}, "(batch, seq_len)");
  fmt::print("    [{}]\n", ids);
  say_about_repeats(vocab, tokens, ids);

  // ---------------------------------------------------------------------
  step(4, "Look up an embedding vector for every token");
  const Matrix table = make_embedding(gen, vocab.size(), o.d_model);
  print_tensor("embedding table", table, {}, wide);
  say(fmt::format("One row of {} numbers per vocabulary word, drawn from N(0, 1) as nn.Embedding({}, {}) "
                  "does with the same seed.",
                  o.d_model, vocab.size(), o.d_model));
  const Matrix E = embed(table, ids);
  print_tensor("E = table[token_ids]", E, {1, seq_len, o.d_model}, wide);
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = i + 1; j < seq_len; ++j)
      if (ids[size_t(i)] == ids[size_t(j)])
        fmt::print("  rows {} and {} ('{}') are identical: {}\n", i, j, tokens[size_t(i)],
                   E.row(i) == E.row(j) ? "yes" : "no");

  // ---------------------------------------------------------------------
  step(5, "Add the sinusoidal positional encoding");
  fmt::print("  PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))\n"
             "  PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))\n");
  const Matrix PE = positional_encoding(seq_len, o.d_model);
  print_tensor("PE", PE, {seq_len, o.d_model}, wide);
  const Matrix X = E + PE;
  print_tensor("X = E + PE", X, {1, seq_len, o.d_model}, wide);
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = i + 1; j < seq_len; ++j)
      if (ids[size_t(i)] == ids[size_t(j)])
        fmt::print("  rows {} and {} ('{}') now differ: largest |X[{}] - X[{}]| = {:.4f}\n", i, j,
                   tokens[size_t(i)], i, j, (X.row(i) - X.row(j)).cwiseAbs().maxCoeff());

  // ---------------------------------------------------------------------
  step(6, "Project X into queries, keys and values");
  const Linear W_q = make_linear(gen, o.d_model, o.d_k);
  const Linear W_k = make_linear(gen, o.d_model, o.d_k);
  const Linear W_v = make_linear(gen, o.d_model, o.d_k);
  say(fmt::format("Three independent nn.Linear({}, {}) layers: weights and biases drawn from "
                  "U(-1/sqrt({}), 1/sqrt({})) = U(-{:.4f}, {:.4f}).",
                  o.d_model, o.d_k, o.d_model, o.d_model, 1.0 / std::sqrt(double(o.d_model)),
                  1.0 / std::sqrt(double(o.d_model))));
  print_tensor("W_q", W_q.W, {}, wide);
  print_tensor("b_q", Matrix(*W_q.b), {o.d_k}, wide);
  print_shape("W_k", {o.d_model, o.d_k});
  print_shape("W_v", {o.d_model, o.d_k});
  const QKV qkv = project_qkv(X, W_q, W_k, W_v);
  print_tensor("Q = X W_q + b_q", qkv.Q, {1, seq_len, o.d_k}, wide);
  print_tensor("K = X W_k + b_k", qkv.K, {1, seq_len, o.d_k}, wide);
  print_tensor("V = X W_v + b_v", qkv.V, {1, seq_len, o.d_k}, wide);
  say("Same tokens, three different views: Q is what each token looks for, K what it offers to be "
      "matched on, V what it hands over once chosen.");
  show_order_blindness(tokens, E, PE, W_q);

  // ---------------------------------------------------------------------
  step(7, "Count the parameters");
  const int64_t weights = 3 * o.d_model * o.d_k, biases = 3 * o.d_k;
  fmt::print("  W_q, W_k, W_v   3 x {} x {} = {}\n", o.d_model, o.d_k, weights);
  fmt::print("  b_q, b_k, b_v   3 x {}      = {}\n", o.d_k, biases);
  fmt::print("  total           {} with biases, {} without\n",
             W_q.parameter_count() + W_k.parameter_count() + W_v.parameter_count(), weights);
  fmt::print("  embedding table {} x {}   = {} (not part of attention)\n", vocab.size(), o.d_model,
             vocab.size() * o.d_model);

  // ---------------------------------------------------------------------
  step(8, "A first look at the scores Q K^T (chapter 2 scales them)");
  const Matrix scores = qkv.Q * qkv.K.transpose();
  print_labelled("scores = Q K^T", scores, tokens, tokens, {.precision = 2});
  say(fmt::format("Entry [i, j] is the dot product of query i with key j: {}, here as large as {:.2f} in "
                  "absolute value. Chapter 2 measures how the spread of such sums grows with d_k, and why "
                  "attention divides them by sqrt(d_k) = {:.2f}.",
                  o.d_k == 1 ? std::string("with d_k = 1 a single product")
                             : fmt::format("a sum of {} products", o.d_k),
                  scores.cwiseAbs().maxCoeff(), std::sqrt(double(o.d_k))));

  // ---------------------------------------------------------------------
  step(9, "The same steps at toy size: d_model 8, d_k 4");
  const std::vector<std::string> small_tokens{"the", "cat", "sat"};
  Matrix X_small(3, 8);
  X_small << 0.1f, 0.2f, -0.1f, 0.3f, 0.4f, -0.2f, 0.1f, 0.0f,  //
      0.3f, -0.1f, 0.5f, 0.2f, 0.1f, 0.4f, -0.3f, 0.2f,         //
      -0.2f, 0.4f, 0.1f, -0.3f, 0.5f, 0.1f, 0.2f, -0.1f;
  say("Hand-written embeddings for three tokens, small enough to print in full. The generator is "
      "re-seeded so this step does not depend on the sizes above.");
  print_tensor("X", X_small, {1, 3, 8});
  Generator small_gen(cli.seed);
  const Linear s_q = make_linear(small_gen, 8, 4), s_k = make_linear(small_gen, 8, 4),
               s_v = make_linear(small_gen, 8, 4);
  print_tensor("W_q", s_q.W);
  print_tensor("b_q", Matrix(*s_q.b), {4});
  Linear s_q_nobias = s_q, s_k_nobias = s_k, s_v_nobias = s_v;
  s_q_nobias.b.reset();
  s_k_nobias.b.reset();
  s_v_nobias.b.reset();
  const QKV plain = project_qkv(X_small, s_q_nobias, s_k_nobias, s_v_nobias);
  const QKV biased = project_qkv(X_small, s_q, s_k, s_v);
  print_tensor("Q = X W_q        (bias=False)", plain.Q, {1, 3, 4});
  print_tensor("Q = X W_q + b_q  (bias=True)", biased.Q, {1, 3, 4});
  print_tensor("K = X W_k + b_k", biased.K, {1, 3, 4});
  print_tensor("V = X W_v + b_v", biased.V, {1, 3, 4});
  const Matrix shift = biased.Q - plain.Q;
  print_tensor("(X W_q + b_q) - X W_q", shift, {1, 3, 4});
  say("Every row moved by the same vector, b_q: the bias shifts all tokens alike, whatever their "
      "content.");
  fmt::print("  parameters: 3 x (8 x 4 + 4) = {} with biases, {} without\n", 3 * (8 * 4 + 4), 3 * 8 * 4);

  // ---------------------------------------------------------------------
  step(10, "How two positions relate: PE similarity and relative offsets");
  const Matrix similarity = show_position_similarity(o, 64);

  // ---------------------------------------------------------------------
  step(11, "Follow one token from its word to its attention output");
  const TokenPath path = show_token_path(o, tokens, ids, vocab.size(), E, PE, X, qkv, scores);

  gap();
  fmt::print("Drawing figures\n");
  draw_figures(figures, o, tokens, scores, similarity, path);
  figures.summary();
  fmt::print("Next: chapter 2 divides these scores by sqrt(d_k) and measures why.\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("01-qkv-projection", [&] { run(argc, argv); });
}
