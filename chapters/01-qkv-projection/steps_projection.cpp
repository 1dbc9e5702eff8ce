// Chapter 1, steps 6 to 9: X projected into queries, keys and values, the
// parameters counted, a first look at the scores Q Kᵀ, and the same steps at
// toy size.
#include "01-qkv-projection/steps.hpp"

#include "sa/nn.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <string>
#include <vector>

namespace sa::ch1 {

namespace {

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

}  // namespace

Projections project_to_qkv(Generator& gen, const Options& o, const TokenIds& text, const Matrix& E,
                           const Positioned& pos) {
  const int64_t seq_len = text.seq_len;
  const Matrix& X = pos.X;
  const Linear W_q = make_linear(gen, o.d_model, o.d_k);
  const Linear W_k = make_linear(gen, o.d_model, o.d_k);
  const Linear W_v = make_linear(gen, o.d_model, o.d_k);
  say(fmt::format("Three independent nn.Linear({}, {}) layers: weights and biases drawn from "
                  "U(-1/sqrt({}), 1/sqrt({})) = U(-{:.4f}, {:.4f}).",
                  o.d_model, o.d_k, o.d_model, o.d_model, 1.0 / std::sqrt(double(o.d_model)),
                  1.0 / std::sqrt(double(o.d_model))));
  print_tensor("W_q", W_q.W, {}, kWide);
  print_tensor("b_q", Matrix(*W_q.b), {o.d_k}, kWide);
  print_shape("W_k", {o.d_model, o.d_k});
  print_shape("W_v", {o.d_model, o.d_k});
  const QKV qkv = project_qkv(X, W_q, W_k, W_v);
  print_tensor("Q = X W_q + b_q", qkv.Q, {1, seq_len, o.d_k}, kWide);
  print_tensor("K = X W_k + b_k", qkv.K, {1, seq_len, o.d_k}, kWide);
  print_tensor("V = X W_v + b_v", qkv.V, {1, seq_len, o.d_k}, kWide);
  say("Same tokens, three different views: Q is what each token looks for, K what it offers to be "
      "matched on, V what it hands over once chosen.");
  show_order_blindness(text.tokens, E, pos.PE, W_q);
  return {W_q, W_k, W_v, qkv};
}

void count_parameters(const Options& o, const Projections& proj, const Vocabulary& vocab) {
  const int64_t weights = 3 * o.d_model * o.d_k, biases = 3 * o.d_k;
  fmt::print("  W_q, W_k, W_v   3 x {} x {} = {}\n", o.d_model, o.d_k, weights);
  fmt::print("  b_q, b_k, b_v   3 x {}      = {}\n", o.d_k, biases);
  fmt::print("  total           {} with biases, {} without\n",
             proj.W_q.parameter_count() + proj.W_k.parameter_count() + proj.W_v.parameter_count(), weights);
  fmt::print("  embedding table {} x {}   = {} (not part of attention)\n", vocab.size(), o.d_model,
             vocab.size() * o.d_model);
}

Matrix first_look_at_scores(const Options& o, const std::vector<std::string>& tokens, const QKV& qkv) {
  const Matrix scores = qkv.Q * qkv.K.transpose();
  print_labelled("scores = Q K^T", scores, tokens, tokens, {.precision = 2});
  say(fmt::format("Entry [i, j] is the dot product of query i with key j: {}, here as large as {:.2f} in "
                  "absolute value. Chapter 2 measures how the spread of such sums grows with d_k, and why "
                  "attention divides them by sqrt(d_k) = {:.2f}.",
                  o.d_k == 1 ? std::string("with d_k = 1 a single product")
                             : fmt::format("a sum of {} products", o.d_k),
                  scores.cwiseAbs().maxCoeff(), std::sqrt(double(o.d_k))));
  return scores;
}

void toy_size_example(uint64_t seed) {
  const std::vector<std::string> small_tokens{"the", "cat", "sat"};
  Matrix X_small(3, 8);
  X_small << 0.1f, 0.2f, -0.1f, 0.3f, 0.4f, -0.2f, 0.1f, 0.0f,  //
      0.3f, -0.1f, 0.5f, 0.2f, 0.1f, 0.4f, -0.3f, 0.2f,         //
      -0.2f, 0.4f, 0.1f, -0.3f, 0.5f, 0.1f, 0.2f, -0.1f;
  say("Hand-written embeddings for three tokens, small enough to print in full. The generator is "
      "re-seeded so this step does not depend on the sizes above.");
  print_tensor("X", X_small, {1, 3, 8});
  Generator small_gen(seed);
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
}

}  // namespace sa::ch1
