// Chapter 5, steps 1 to 6: the causal mask in one head (the scores, the
// mask, -inf before softmax, softmax; zeroing after softmax, the wrong way)
// and in every head of chapter 4's multi-head attention.
#include "01-qkv-projection/qkv.hpp"
#include "02-scaling/scaling.hpp"
#include "03-softmax/softmax.hpp"
#include "04-multi-head/multihead.hpp"
#include "05-causal-mask/mask.hpp"
#include "05-causal-mask/steps.hpp"

#include "01-qkv-projection/running_example.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch5 {

namespace {

void print_rows_of(const std::vector<std::string>& items, const std::string& first_label, size_t per_line = 6) {
  for (size_t at = 0; at < items.size(); at += per_line)
    fmt::print("  {:<12} {}\n", at == 0 ? first_label : "",
               fmt::join(items.begin() + long(at), items.begin() + long(std::min(at + per_line, items.size())), "  "));
}

}  // namespace

std::string row_str(const Matrix& m, int64_t row, int precision) {
  std::string s = "[";
  for (int64_t j = 0; j < m.cols(); ++j) s += (j ? ", " : "") + format_value(m(row, j), precision);
  return s + "]";
}

double upper_sum(const Matrix& w) {
  double s = 0;
  for (int64_t i = 0; i < w.rows(); ++i)
    for (int64_t j = i + 1; j < w.cols(); ++j) s += w(i, j);
  return s;
}

Example running_example_scores(uint64_t seed, const Options& o, const std::vector<std::string>& tokens) {
  const int64_t seq_len = int64_t(tokens.size());
  say("Rebuilt as in chapter 1 (same seed, same order of draws): embeddings plus positional encoding, then four "
      "nn.Linear(d_model, d_model) layers W_q, W_k, W_v, W_o. The first three are exactly chapter 1's "
      "projections; W_o is used by the multi-head step. One head of width d_k = d_model until step 6.");
  Generator gen(seed);
  const Matrix X = embed_text(gen, tokens, o.d_model).X;
  const AttentionParams params = make_attention_params(gen, o.d_model);
  const QKV qkv = project_qkv(X, params.W_q, params.W_k, params.W_v);
  fmt::print("  tokens  {}\n", tokens);
  print_shape("X = E + PE", {1, seq_len, o.d_model}, "(batch, seq_len, d_model)");
  print_shape("Q, K, V", {1, seq_len, o.d_model});
  const Matrix scores = scaled_scores(qkv.Q, qkv.K);
  print_labelled(fmt::format("scores = Q K^T / sqrt({})", o.d_model), scores, tokens, tokens, {},
                 {1, seq_len, seq_len});
  return {tokens, seq_len, X, params, qkv, scores};
}

Mask build_causal_mask(const Example& ex, FigureData& fig) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  say("A language model predicts token i+1 from tokens 0..i. If query i could see key i+1 during training, it "
      "would learn to copy the answer, and at generation time, when that token does not exist yet, it would have "
      "nothing to copy. The mask is 1 (allowed) on and below the diagonal, 0 (forbidden) above it: "
      "mask[i, j] = 1 if j <= i. PyTorch: torch.tril(torch.ones(seq_len, seq_len)).");
  const Mask causal = causal_mask(seq_len);
  fig.causal = causal;
  print_labelled("mask = causal_mask(seq_len)", as_numbers(causal), tokens, tokens, {.precision = 0});
  fmt::print("\n");
  size_t word_w = 0;
  for (const auto& t : tokens) word_w = std::max(word_w, t.size());
  for (int64_t i = 0; i < seq_len; ++i) {
    std::vector<std::string> allowed, forbidden;
    for (int64_t j = 0; j < seq_len; ++j) (causal(i, j) ? allowed : forbidden).push_back(tokens[size_t(j)]);
    fmt::print("  {:>{}} ({})  sees {:<{}}  hidden: {}\n", tokens[size_t(i)], word_w, i,
               fmt::format("{}", fmt::join(allowed, " ")), (word_w + 1) * size_t(seq_len),
               forbidden.empty() ? "-" : fmt::format("{}", fmt::join(forbidden, " ")));
  }
  fmt::print("  allowed pairs: {} of {} = n(n+1)/2\n", causal.count(), seq_len * seq_len);
  return causal;
}

void mask_the_scores(const Example& ex, const Mask& causal, FigureData& fig) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  const Matrix& scores = ex.scores;
  say("The forbidden scores are replaced by -inf before softmax. PyTorch: scores.masked_fill(mask == 0, "
      "float('-inf')). The allowed scores are not touched.");
  const Matrix masked = apply_mask(scores, causal);
  fig.masked_scores = masked;
  print_labelled("masked = apply_mask(scores, mask)", masked, tokens, tokens, {}, {1, seq_len, seq_len});
}

Attention masked_softmax(const Example& ex, const Options& o, const Mask& causal, FigureData& fig) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  const QKV& qkv = ex.qkv;
  say("exp(-inf) = 0 exactly, so a forbidden key adds nothing to the row's sum and gets weight 0; the allowed keys "
      "share the whole probability. masked_attention(Q, K, V, mask) does the three steps (scaled scores, mask, "
      "softmax) and multiplies by V.");
  const Attention causal_att = masked_attention(qkv.Q, qkv.K, qkv.V, causal);
  const Matrix& weights = causal_att.weights;
  fig.causal_weights = weights;
  print_labelled("weights = softmax(masked, dim=-1)", weights, tokens, tokens, {}, {1, seq_len, seq_len});
  print_tensor("output = weights V", causal_att.output, {1, seq_len, o.d_model}, wide);
  fmt::print("\n  checks\n");
  const double upper = upper_sum(weights);
  fmt::print("    sum of the weights above the diagonal    {:g}{}\n", upper,
             upper == 0.0 ? "   (exactly 0, not just small)" : "   <- not 0!");
  fmt::print("    {:<41}{}\n", fmt::format("row 0 ('{}')", tokens[0]), row_str(weights, 0, 0));
  fmt::print("    output row 0 == V row 0, bit for bit     {}\n",
             causal_att.output.row(0) == qkv.V.row(0) ? "yes" : "no");
  std::vector<std::string> counts, sums;
  bool counts_ok = true;
  for (int64_t i = 0; i < seq_len; ++i) {
    const int64_t nonzero = (weights.row(i).array() != 0.0f).count();
    counts_ok = counts_ok && nonzero == i + 1;
    counts.push_back(fmt::format("{}:{}", i, nonzero));
    sums.push_back(fmt::format("{:.7f}", weights.row(i).cast<double>().sum()));
  }
  print_rows_of(counts, "  non-zero", 8);
  fmt::print("    row i has i+1 non-zero weights           {}\n", counts_ok ? "yes, every row" : "no");
  print_rows_of(sums, "  row sums", 6);
  say("The first token may look only at itself, so its weight is 1 and its output is its own value vector, "
      "unchanged. Each later token has one more key to spread its attention over.");
  return causal_att;
}

Matrix zeroing_after_softmax(const Example& ex, const Mask& causal, const Matrix& weights, FigureData& fig) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  const Matrix& scores = ex.scores;
  say("Chapter 3 zeroed the future weights after the softmax. Side by side with masking before it:");
  const Matrix bidirectional = softmax_rows(scores);
  fig.bidirectional_weights = bidirectional;
  Matrix zeroed = bidirectional;
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = 0; j < seq_len; ++j)
      if (!causal(i, j)) zeroed(i, j) = 0.0f;
  fmt::print("\n  {:>8}  {:>22}  {:>22}  {:>24}\n", "query", "zero after softmax", "-inf before softmax",
             "zero after, then / sum");
  fmt::print("  {:>8}  {:>22}  {:>22}  {:>24}\n", "", "row sum", "row sum", "largest diff. to -inf");
  double worst_renormalised = 0;
  for (int64_t i = 0; i < seq_len; ++i) {
    const double zsum = zeroed.row(i).cast<double>().sum();
    const Matrix renormalised = zeroed.row(i) / float(zsum);
    const double diff = (renormalised - weights.row(i)).cwiseAbs().maxCoeff();
    worst_renormalised = std::max(worst_renormalised, diff);
    fmt::print("  {:>8}  {:>22.4f}  {:>22.4f}  {:>24}\n", tokens[size_t(i)], zsum,
               weights.row(i).cast<double>().sum(), rounding(diff, 1e-6));
  }
  if (seq_len == 1)
    say("With a single token nothing lies in the future, so zeroing after the softmax removes nothing: the one "
        "weight stays 1 either way.");
  else
  say(
      fmt::format("Zeroing after the softmax leaves each query with only the share it happened to give the past: "
                  "row 0 keeps {:.4f}, so its output is V[0] shrunk to {:.0f}% instead of V[0] itself. Dividing each "
                  "row by its new sum repairs it (the last column: {}, float32 rounding), because "
                  "softmax over a subset of keys is the full softmax restricted and renormalised. -inf before the "
                  "softmax gives those weights in one step.",
                  zeroed(0, 0), 100.0 * zeroed(0, 0), rounding(worst_renormalised, 1e-6)));
  return bidirectional;
}

void multi_head_causal(const Example& ex, const Options& o, const Mask& causal, const Matrix& weights,
                       const Matrix& bidirectional, FigureData& fig) {
  const std::vector<std::string>& tokens = ex.tokens;
  const int64_t seq_len = ex.seq_len;
  const int64_t d_k = o.d_model / o.n_heads;
  const Matrix& X = ex.X;
  const AttentionParams& params = ex.params;
  say("Chapter 4's multi_head_attention takes the attention of one head as a callback. Passing one that calls "
      "masked_attention with the causal mask makes every head causal; the (seq, seq) mask is shared by all heads, "
      "as PyTorch broadcasts a (seq, seq) mask over (batch, heads, seq, seq).");
  const Matrix Q_all = linear(X, params.W_q);
  const Tensor4 Q_h = split_heads(Q_all, 1, o.n_heads);
  print_shape("X", {1, seq_len, o.d_model}, "(batch, seq, d_model)");
  print_shape("Q = X W_q + b_q (K, V alike)", {1, seq_len, o.d_model});
  print_shape("split into heads", Q_h.shape(), "(batch, n_heads, seq, d_k)");
  print_shape("mask", {seq_len, seq_len}, fmt::format("broadcast over (1, {}, {}, {})", o.n_heads, seq_len, seq_len));
  const HeadAttention causal_head = [&](const Matrix& Q, const Matrix& K, const Matrix& V, int64_t) {
    return masked_attention(Q, K, V, causal);
  };
  const MultiHead mh = multi_head_attention(X, X, 1, params, o.n_heads, causal_head);
  fig.head_weights = mh.weights;
  fig.d_k = d_k;
  print_shape("weights", mh.weights.shape(), "(batch, n_heads, seq_q, seq_k)");
  print_shape("per-head outputs", {1, o.n_heads, seq_len, d_k}, "(batch, n_heads, seq, d_k)");
  print_shape("combined", {1, seq_len, o.d_model}, "(batch, seq, d_model)");
  print_tensor("output = combined W_o + b_o", mh.output, {1, seq_len, o.d_model}, wide);
  print_labelled("weights[0, 0] (head 0)", Matrix(mh.weights.view(0, 0)), tokens, tokens);
  fmt::print("\n  {:>6}  {:>14}  {:>14}  {:>12}  {:>12}  {:>10}\n", "head", "upper sum", "row 0", "i+1 weights",
             "entropy", "focus");
  const int64_t shown_heads = std::min(o.n_heads, kMaxHeadsShown);
  for (int64_t h = 0; h < shown_heads; ++h) {
    const Matrix w = mh.weights.view(0, h);
    bool ok = true;
    for (int64_t i = 0; i < seq_len; ++i) ok = ok && (w.row(i).array() != 0.0f).count() == i + 1;
    const auto H = row_entropy(w);
    double mean_h = 0;
    for (double x : H) mean_h += x / double(seq_len);
    fmt::print("  {:>6}  {:>14g}  {:>14}  {:>12}  {:>12.4f}  {:>10.4f}\n", h, upper_sum(w),
               w(0, 0) != 1.0f ? "not one-hot" : seq_len == 1 ? "[1]" : seq_len == 2 ? "[1, 0]" : "[1, 0, ...]",
               ok ? "yes" : "no", mean_h, focus(w));
  }
  if (shown_heads < o.n_heads) fmt::print("  ... ({})\n", count_of(o.n_heads - shown_heads, "more head"));
  {
    // The single-head weights above use all d_model columns; a head's use
    // only its d_k columns, so the patterns differ. Entropy of the
    // bidirectional weights, for comparison with the causal ones.
    double mean_bi = 0, mean_causal = 0;
    for (double x : row_entropy(bidirectional)) mean_bi += x / double(seq_len);
    for (double x : row_entropy(weights)) mean_causal += x / double(seq_len);
    say(fmt::format(
        "Every head is lower-triangular with a one-hot first row, whatever its scores. Entropy is "
        "the mean over queries, in nats (chapter 3); causal rows have fewer keys, so less room for "
        "it: at most log(i+1) for row i, {:.4f} on average over the {}, against log {} = {:.4f} "
        "without the mask. The single head of step 4 has {:.4f} causal, {:.4f} bidirectional.",
        [&] {
          double s = 0;
          for (int64_t i = 0; i < seq_len; ++i) s += std::log(double(i + 1)) / double(seq_len);
          return s;
        }(),
        count_of(seq_len, "row"), seq_len, std::log(double(seq_len)), mean_causal, mean_bi));
  }
}

}  // namespace sa::ch5
