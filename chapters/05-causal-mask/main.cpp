// Chapter 5: masks — no peeking at the future, no attending to padding.
//
// Builds the causal (lower-triangular) mask of "the cat sat on the mat",
// puts -inf on the scores it forbids, and checks that softmax then gives
// weights exactly 0 above the diagonal; runs the same mask through every
// head of chapter 4's multi-head attention; shows again why zeroing weights
// after softmax is wrong; masks the padding of a batch of sequences of
// different lengths, alone and together with the causal mask; and settles
// what a query that may see nothing gets: zeros, where PyTorch 1.13 gives
// NaN.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "01-qkv-projection/qkv.hpp"
#include "01-qkv-projection/running_example.hpp"
#include "02-scaling/scaling.hpp"
#include "03-softmax/softmax.hpp"
#include "04-multi-head/multihead.hpp"
#include "05-causal-mask/mask.hpp"
#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/nn.hpp"
#include "sa/plot.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"
#include "sa/text.hpp"

using namespace sa;

namespace {

struct Options {
  std::string text = "the cat sat on the mat";
  std::string lengths = "auto";  // auto: seq, 2/3 seq, 1/3 seq
  int64_t n_heads = 4;
  int64_t d_model = 64;
};

constexpr int64_t kMaxBatch = 8;   // sequences in the padded batch
const std::string kPad = "<pad>";  // label of a padding position

// "--lengths 6,4,2" -> {6, 4, 2}, every length in [0, seq_len]. One clear
// line (UsageError) for anything else.
std::vector<int64_t> parse_lengths(const std::string& text, int64_t seq_len) {
  std::vector<int64_t> lengths;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    int64_t value = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error == std::errc::result_out_of_range && end == item.data() + item.size())
      throw UsageError(fmt::format("--lengths: {} is longer than the text's {} tokens, the length everything is "
                                   "padded to",
                                   item, seq_len));
    if (item.empty() || error != std::errc() || end != item.data() + item.size())
      throw UsageError(fmt::format("--lengths: '{}' is not a whole number (give lengths like 6,4,2)", item));
    if (value < 0) throw UsageError(fmt::format("--lengths: {} is negative; a sequence has 0 or more tokens", value));
    if (value > seq_len)
      throw UsageError(
          fmt::format("--lengths: {} is longer than the text's {} tokens, the length everything is "
                      "padded to",
                      value, seq_len));
    lengths.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (int64_t(lengths.size()) > kMaxBatch)
    throw UsageError(fmt::format("--lengths: {} sequences given, at most {} are shown", lengths.size(), kMaxBatch));
  return lengths;
}

// A mask as numbers: 1 = allowed, 0 = forbidden.
Matrix as_numbers(const Mask& mask) { return mask.cast<float>(); }

// "[1.0000, 0.0000, 0.0000]": one row, inline.
std::string row_str(const Matrix& m, int64_t row, int precision = 4) {
  std::string s = "[";
  for (int64_t j = 0; j < m.cols(); ++j) s += (j ? ", " : "") + format_value(m(row, j), precision);
  return s + "]";
}

int64_t count_nan(const Matrix& m) { return m.array().isNaN().count(); }

// Sum of the weights strictly above the diagonal, in double.
double upper_sum(const Matrix& w) {
  double s = 0;
  for (int64_t i = 0; i < w.rows(); ++i)
    for (int64_t j = i + 1; j < w.cols(); ++j) s += w(i, j);
  return s;
}

// softmax as PyTorch 1.13 computes it, kept only to show what it gives on a
// row that is all -inf: the row maximum is -inf, x - max is -inf - (-inf) =
// NaN, and NaN spreads to the whole row. The book's softmax_rows (chapter 3)
// returns zeros there instead.
Matrix torch_1_13_softmax(const Matrix& scores) {
  Matrix w(scores.rows(), scores.cols());
  for (int64_t i = 0; i < scores.rows(); ++i) {
    const float m = scores.row(i).maxCoeff();
    const Eigen::Array<float, 1, Eigen::Dynamic> e = (scores.row(i).array() - m).exp();
    w.row(i) = (e / e.sum()).matrix();
  }
  return w;
}

// Labels of sequence b of the padded batch: its tokens, then <pad>.
std::vector<std::string> padded_labels(const std::vector<std::string>& tokens, int64_t length) {
  std::vector<std::string> labels(tokens.begin(), tokens.begin() + length);
  labels.resize(tokens.size(), kPad);
  return labels;
}

void print_rows_of(const std::vector<std::string>& items, const std::string& first_label, size_t per_line = 6) {
  for (size_t at = 0; at < items.size(); at += per_line)
    fmt::print("  {:<12} {}\n", at == 0 ? first_label : "",
               fmt::join(items.begin() + long(at), items.begin() + long(std::min(at + per_line, items.size())), "  "));
}

struct FigureData {
  std::vector<std::string> tokens;
  Mask causal;
  Matrix masked_scores, causal_weights, bidirectional_weights;
  Tensor4 head_weights;
  int64_t d_k = 0;
  std::vector<int64_t> lengths;
  std::vector<Matrix> pad_weights, pad_causal_weights;
};

void draw_figures(Figures& figures, const FigureData& d) {
  const int64_t seq_len = int64_t(d.tokens.size());
  // Cell numbers only while they stay readable.
  const bool annotate = seq_len <= 10;

  figures.draw("causal_triptych.png", [&](const std::string& path) {
    plot::Heatmap mask;
    mask.title = "1. causal mask (1 = allowed)";
    mask.values = as_numbers(d.causal);
    mask.cblabel = "allowed";
    mask.decimals = 0;
    mask.vmin = 0;
    mask.vmax = 1;
    plot::Heatmap scores;
    scores.title = "2. masked scores (grey: -inf)";
    scores.values = d.masked_scores;
    scores.cblabel = "q.k / sqrt(d_k)";
    scores.diverging = true;
    scores.decimals = 2;
    plot::Heatmap weights = plot::weights_heatmap("3. softmax: weights (upper triangle 0)", d.causal_weights, d.tokens);
    weights.cblabel = "weight";
    for (plot::Heatmap* h : {&mask, &scores, &weights}) {
      h->row_labels = d.tokens;
      h->col_labels = d.tokens;
      h->annotate = annotate;
    }
    return plot::heatmap_grid(path, "Causal masking: mask, scores with -inf above the diagonal, weights", 1, 3,
                              {mask, scores, weights}, 520);
  });

  figures.draw("bidirectional_vs_causal.png", [&](const std::string& path) {
    plot::Heatmap bi = plot::weights_heatmap("bidirectional: every query sees every key", d.bidirectional_weights,
                                             d.tokens);
    plot::Heatmap causal = plot::weights_heatmap("causal: query i sees keys 0..i", d.causal_weights, d.tokens);
    for (plot::Heatmap* h : {&bi, &causal}) {
      h->cblabel = "weight";
      h->annotate = annotate;
    }
    return plot::heatmap_grid(path, "The same scores, without and with the causal mask (one head, d_k = d_model)", 1, 2,
                              {bi, causal}, 560);
  });

  figures.draw("multihead_causal.png", [&](const std::string& path) {
    const int64_t n = d.head_weights.heads();
    // As square a grid as the number of heads allows (a prime gives one row).
    int64_t cols = n;
    for (int64_t c = int64_t(std::ceil(std::sqrt(double(n)))); c <= n; ++c)
      if (n % c == 0) {
        cols = c;
        break;
      }
    std::vector<plot::Heatmap> panels;
    for (int64_t h = 0; h < n; ++h) {
      const Matrix w = d.head_weights.view(0, h);
      const auto H = row_entropy(w);
      double mean_h = 0;
      for (double x : H) mean_h += x / double(H.size());
      plot::Heatmap p = plot::weights_heatmap(fmt::format("head {}: H {:.2f} nats, focus {:.2f}", h, mean_h, focus(w)),
                                              w, d.tokens);
      p.cblabel = "weight";
      p.annotate = annotate && n <= 8;
      panels.push_back(p);
    }
    const int panel_px = n <= 4 ? 480 : n <= 16 ? 360 : 240;
    return plot::heatmap_grid(path, fmt::format("Causal attention in each of {} heads (d_k = {})", n, d.d_k),
                              int(n / cols), int(cols), panels, panel_px);
  });

  figures.draw("padding_batch.png", [&](const std::string& path) {
    const int64_t batch = int64_t(d.lengths.size());
    std::vector<plot::Heatmap> panels;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t b = 0; b < batch; ++b) {
        plot::Heatmap p = plot::weights_heatmap(
            fmt::format("length {}: {}", d.lengths[size_t(b)], pass == 0 ? "padding mask" : "padding + causal"),
            pass == 0 ? d.pad_weights[size_t(b)] : d.pad_causal_weights[size_t(b)],
            padded_labels(d.tokens, d.lengths[size_t(b)]));
        p.cblabel = "weight";
        p.annotate = annotate;
        panels.push_back(p);
      }
    return plot::heatmap_grid(path, "A padded batch: weights per sequence (top: padding only; bottom: with causal)", 2,
                              int(batch), panels, batch <= 4 ? 440 : 340);
  });
}

void run(int argc, char** argv) {
  Options o;
  Cli cli("05-causal-mask",
          "Chapter 5: the causal mask (-inf above the diagonal before softmax), in one head and in every head of "
          "multi-head attention; padding masks for a batch of sequences of different lengths; and what a query "
          "that may see nothing gets (zeros, never NaN).");
  cli.add("--text", &o.text, "the sentence to attend over (words split on spaces, at most 64 words)");
  cli.add("--lengths", &o.lengths,
          "comma-separated lengths of the padded batch, each from 0 to the number of tokens; auto = all, 2/3 "
          "and 1/3 of them (6,4,2 for the default text)");
  cli.add("--n-heads", &o.n_heads, "attention heads in the multi-head step", IntRange{1, 4096});
  cli.add("--d-model", &o.d_model, "width of a token vector (divisible by --n-heads)", IntRange{1, 4096});
  cli.parse(argc, argv);
  if (o.d_model % o.n_heads != 0)
    throw UsageError(
        fmt::format("--d-model {} is not divisible by --n-heads {}: every head gets d_model / n_heads "
                    "columns",
                    o.d_model, o.n_heads));
  // Refuse a bad text or bad lengths before anything prints.
  const auto tokens = tokenize_text(o.text);
  const int64_t seq_len = int64_t(tokens.size());
  const std::vector<int64_t> lengths = o.lengths == "auto"
                                           ? std::vector<int64_t>{seq_len, (2 * seq_len + 1) / 3, seq_len / 3}
                                           : parse_lengths(o.lengths, seq_len);
  const int64_t batch = int64_t(lengths.size());
  const int64_t d_k = o.d_model / o.n_heads;
  // The run against the budget: the (d_model, d_model) projections are the
  // work; at the ranges' ends 1.3 s of CPU and 330 MB (one core).
  const double d2 = double(o.d_model) * double(o.d_model);
  cli.check_budget({0.5 + 1e-7 * d2, 24.0 * d2, fmt::format("--d-model {}", o.d_model)});

  Figures figures(cli);
  const PrintOptions wide{.max_cols = 8};
  FigureData fig;
  fig.tokens = tokens;
  fig.lengths = lengths;

  chapter_title("Chapter 5: masks, or what a query may not see");
  fmt::print("text \"{}\", d_model {}, n_heads {}, lengths {}, seed {}\n", o.text, o.d_model, o.n_heads,
             fmt::join(lengths, ","), cli.seed);

  // ---------------------------------------------------------------------
  step(1, "The scores of the running example");
  say("Rebuilt as in chapter 1 (same seed, same order of draws): embeddings plus positional encoding, then four "
      "nn.Linear(d_model, d_model) layers W_q, W_k, W_v, W_o. The first three are exactly chapter 1's "
      "projections; W_o is used by the multi-head step. One head of width d_k = d_model until step 6.");
  Generator gen(cli.seed);
  const Matrix X = embed_text(gen, tokens, o.d_model).X;
  const AttentionParams params = make_attention_params(gen, o.d_model);
  const QKV qkv = project_qkv(X, params.W_q, params.W_k, params.W_v);
  fmt::print("  tokens  {}\n", tokens);
  print_shape("X = E + PE", {1, seq_len, o.d_model}, "(batch, seq_len, d_model)");
  print_shape("Q, K, V", {1, seq_len, o.d_model});
  const Matrix scores = scaled_scores(qkv.Q, qkv.K);
  print_labelled(fmt::format("scores = Q K^T / sqrt({})", o.d_model), scores, tokens, tokens, {},
                 {1, seq_len, seq_len});

  // ---------------------------------------------------------------------
  step(2, "The causal mask: query i may look at keys 0..i");
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

  // ---------------------------------------------------------------------
  step(3, "Mask the scores: -inf where the mask is 0");
  say("The forbidden scores are replaced by -inf before softmax. PyTorch: scores.masked_fill(mask == 0, "
      "float('-inf')). The allowed scores are not touched.");
  const Matrix masked = apply_mask(scores, causal);
  fig.masked_scores = masked;
  print_labelled("masked = apply_mask(scores, mask)", masked, tokens, tokens, {}, {1, seq_len, seq_len});

  // ---------------------------------------------------------------------
  step(4, "Softmax: the upper triangle becomes exactly 0");
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

  // ---------------------------------------------------------------------
  step(5, "The wrong way revisited: zeroing after softmax");
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

  // ---------------------------------------------------------------------
  step(6, fmt::format("Multi-head causal attention: {} heads of d_k = {}", o.n_heads, d_k));
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
  const int64_t shown_heads = std::min<int64_t>(o.n_heads, 16);
  for (int64_t h = 0; h < shown_heads; ++h) {
    const Matrix w = mh.weights.view(0, h);
    bool ok = true;
    for (int64_t i = 0; i < seq_len; ++i) ok = ok && (w.row(i).array() != 0.0f).count() == i + 1;
    const auto H = row_entropy(w);
    double mean_h = 0;
    for (double x : H) mean_h += x / double(seq_len);
    fmt::print("  {:>6}  {:>14g}  {:>14}  {:>12}  {:>12.4f}  {:>10.4f}\n", h, upper_sum(w),
               w(0, 0) == 1.0f ? "[1, 0, ...]" : "not one-hot", ok ? "yes" : "no", mean_h, focus(w));
  }
  if (shown_heads < o.n_heads) fmt::print("  ... ({} more heads)\n", o.n_heads - shown_heads);
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
        "it: at most log(i+1) for row i, {:.4f} on average over the {} rows, against log {} = {:.4f} "
        "without the mask. The single head of step 4 has {:.4f} causal, {:.4f} bidirectional.",
        [&] {
          double s = 0;
          for (int64_t i = 0; i < seq_len; ++i) s += std::log(double(i + 1)) / double(seq_len);
          return s;
        }(),
        seq_len, seq_len, std::log(double(seq_len)), mean_causal, mean_bi));
  }

  // ---------------------------------------------------------------------
  step(7, fmt::format("Padding masks: a batch of {} sequences of lengths {}", batch, fmt::join(lengths, ", ")));
  say(
      fmt::format("Sequences in a batch must have the same length, so shorter ones are padded to {}. Here sequence "
                  "b is the first lengths[b] tokens of the sentence; its padding positions hold the zero vector "
                  "(a <pad> embedding would do as well: the point is that nothing may read it). The padding mask "
                  "allows key j iff j < length, for every query.",
                  seq_len));
  Matrix X_batch = Matrix::Zero(batch * seq_len, o.d_model);
  for (int64_t b = 0; b < batch; ++b)
    X_batch.middleRows(b * seq_len, lengths[size_t(b)]) = X.topRows(lengths[size_t(b)]);
  const QKV batch_qkv = project_qkv(X_batch, params.W_q, params.W_k, params.W_v);
  print_shape("X (padded batch)", {batch, seq_len, o.d_model}, "(batch, seq_len, d_model)");
  print_shape("Q, K, V", {batch, seq_len, o.d_model});
  const std::vector<Mask> pad_masks = padding_masks(lengths, seq_len);
  print_shape("padding masks", {batch, seq_len, seq_len}, "one (seq, seq) mask per sequence");
  auto sequence = [&](const Matrix& m, int64_t b) { return Matrix(m.middleRows(b * seq_len, seq_len)); };
  std::vector<Attention> pad_att;
  for (int64_t b = 0; b < batch; ++b) {
    const auto labels = padded_labels(tokens, lengths[size_t(b)]);
    fmt::print("\n  sequence {} (length {}): {}\n", b, lengths[size_t(b)], labels);
    print_labelled(fmt::format("padding_masks(...)[{}]", b), as_numbers(pad_masks[size_t(b)]), labels, labels,
                   {.precision = 0});
    pad_att.push_back(masked_attention(sequence(batch_qkv.Q, b), sequence(batch_qkv.K, b), sequence(batch_qkv.V, b),
                                       pad_masks[size_t(b)]));
    fig.pad_weights.push_back(pad_att.back().weights);
    print_labelled(fmt::format("weights of sequence {}", b), pad_att.back().weights, labels, labels);
  }
  {
    // Fill every padding position with junk and run again: the real tokens'
    // outputs must not move.
    Matrix X_junk = X_batch;
    for (int64_t b = 0; b < batch; ++b)
      X_junk.middleRows(b * seq_len + lengths[size_t(b)], seq_len - lengths[size_t(b)]).setConstant(100.0f);
    const QKV junk = project_qkv(X_junk, params.W_q, params.W_k, params.W_v);
    double real_diff = 0, pad_diff = 0;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t L = lengths[size_t(b)];
      const Attention a =
          masked_attention(sequence(junk.Q, b), sequence(junk.K, b), sequence(junk.V, b), pad_masks[size_t(b)]);
      const Matrix diff = (a.output - pad_att[size_t(b)].output).cwiseAbs();
      if (L > 0) real_diff = std::max(real_diff, double(diff.topRows(L).maxCoeff()));
      if (L < seq_len) pad_diff = std::max(pad_diff, double(diff.bottomRows(seq_len - L).maxCoeff()));
    }
    int64_t real_count = 0, pad_count = 0, pad_with_choice = 0;  // pad_with_choice: <pad> queries seeing 2+ keys
    for (int64_t L : lengths) {
      real_count += L;
      pad_count += seq_len - L;
      if (L >= 2) pad_with_choice += seq_len - L;
    }
    if (pad_count == 0) {
      fmt::print("\n");
      say("No sequence is padded here: every length is the text's, so there is no padding to refill with junk.");
    } else {
      fmt::print("\n  every padding position refilled with 100s, then attention again:\n");
      if (real_count > 0) fmt::print("    largest change in the outputs of real tokens    {:g}\n", real_diff);
      fmt::print("    largest change in the outputs of <pad> queries  {:.4g}\n", pad_diff);
      std::string pad_sentence;
      if (pad_diff > 0)
        pad_sentence = "The <pad> rows are queries too and still produce outputs, here from whatever their junk "
                       "asks for, so those changed";
      else if (pad_with_choice == 0) {
        const bool has_1 = std::count(lengths.begin(), lengths.end(), 1) > 0;
        const bool has_0 = std::count(lengths.begin(), lengths.end(), 0) > 0;
        pad_sentence = fmt::format(
            "The <pad> rows are queries too, but here their outputs did not change: {}{}{}",
            has_1 ? "in a sequence of length 1 a <pad> query sees one key, weighted 1 whatever it asks" : "",
            has_1 && has_0 ? ", and " : "",
            has_0 ? "in a sequence of length 0 a <pad> query sees no key at all (step 9)" : "");
      }
      else
        pad_sentence = "The <pad> rows are queries too and produce outputs from what their junk asks for, although "
                       "this refill happened to leave them unchanged";
      say(fmt::format("{}{}; whatever comes next, a loss for instance, must ignore those rows.",
                      real_count > 0 ? "The real tokens cannot tell what the padding holds: its scores become -inf "
                                       "and its values are multiplied by weights of exactly 0. "
                                     : "There are no real tokens in this batch, only padding. ",
                      pad_sentence));
    }
  }

  // ---------------------------------------------------------------------
  step(8, "Padding and causal together: mask_and");
  say("A decoder with a padded batch needs both rules: key j is visible to query i iff j <= i and j < length. "
      "mask_and combines them element by element.");
  std::vector<Attention> pad_causal_att;
  for (int64_t b = 0; b < batch; ++b) {
    const Mask both = mask_and(causal, pad_masks[size_t(b)]);
    pad_causal_att.push_back(
        masked_attention(sequence(batch_qkv.Q, b), sequence(batch_qkv.K, b), sequence(batch_qkv.V, b), both));
    fig.pad_causal_weights.push_back(pad_causal_att.back().weights);
  }
  {
    const int64_t b = std::min<int64_t>(1, batch - 1);
    const auto labels = padded_labels(tokens, lengths[size_t(b)]);
    print_labelled(fmt::format("mask_and(causal, padding[{}])  (length {})", b, lengths[size_t(b)]),
                   as_numbers(mask_and(causal, pad_masks[size_t(b)])), labels, labels, {.precision = 0});
    print_labelled(fmt::format("weights of sequence {}", b), pad_causal_att[size_t(b)].weights, labels, labels);
  }
  fmt::print("\n  {:>9}  {:>7}  {:>22}  {:>28}\n", "sequence", "length", "upper-triangle sum",
             "real rows vs step 4 (max diff)");
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t L = lengths[size_t(b)];
    const Attention& a = pad_causal_att[size_t(b)];
    const double diff =
        L > 0 ? double((a.output.topRows(L) - causal_att.output.topRows(L)).cwiseAbs().maxCoeff()) : 0.0;
    fmt::print("  {:>9}  {:>7}  {:>22g}  {:>28}\n", b, L, upper_sum(a.weights),
               L > 0 ? rounding(diff, rounding_bound(causal_att.output.topRows(L).cwiseAbs().maxCoeff()))
                     : std::string("(no real rows)"));
  }
  say("Each sequence is a prefix of the sentence, and a causal query only ever sees a prefix: so the real rows of "
      "every padded sequence reproduce the first rows of step 4's causal output (up to float32 rounding), however "
      "much padding follows. That is also why a model can generate one token at a time and keep the keys and "
      "values of the tokens it has already seen.");

  // ---------------------------------------------------------------------
  step(9, "A query that may see nothing");
  say("With a causal mask alone every row keeps its diagonal. But masks combine: a sequence of length 0, or a "
      "left-padded sequence under the causal mask (its first queries are padding and may only look at earlier "
      "positions, which are padding too) leaves rows with no key at all. Softmax of [-inf, ..., -inf] is 0/0.");
  {
    const Mask nothing = padding_masks({0}, seq_len)[0];
    const Attention a = masked_attention(qkv.Q, qkv.K, qkv.V, nothing);
    fmt::print("\n  (a) a sequence of length 0: padding_masks({{0}}, {})[0] forbids every key\n", seq_len);
    fmt::print("    weights row 0   {}\n", row_str(a.weights, 0, 0));
    fmt::print("    weights: largest |w| {:g}, NaN entries {};  output: largest |y| {:g}, NaN entries {}\n",
               a.weights.cwiseAbs().maxCoeff(), count_nan(a.weights), a.output.cwiseAbs().maxCoeff(),
               count_nan(a.output));
  }
  // Left padding: the first `left_pad` positions are padding, so no query
  // may look at them; under the causal mask their own queries have nothing
  // else to look at.
  const int64_t left_pad = std::max<int64_t>(1, seq_len / 3);
  Mask real_keys(seq_len, seq_len);
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = 0; j < seq_len; ++j) real_keys(i, j) = j >= left_pad;
  const Mask left_causal = mask_and(causal, real_keys);
  // The sentence's own vectors stay in those positions: the mask alone
  // decides that they are padding.
  std::vector<std::string> left_labels = tokens;
  std::fill(left_labels.begin(), left_labels.begin() + left_pad, kPad);
  fmt::print("\n  (b) the same sentence, its first {} position{} treated as left padding, under the causal mask\n",
             left_pad, left_pad == 1 ? "" : "s");
  print_labelled("mask_and(causal, keys j >= " + std::to_string(left_pad) + ")", as_numbers(left_causal), left_labels,
                 left_labels, {.precision = 0});
  const Matrix left_scores = apply_mask(scores, left_causal);
  const Attention book = masked_attention(qkv.Q, qkv.K, qkv.V, left_causal);
  print_labelled("weights = masked_attention(Q, K, V, mask).weights", book.weights, left_labels, left_labels);
  fmt::print("    output rows 0..{}: largest |y| {:g};  NaN entries in weights {}, in output {}\n", left_pad - 1,
             book.output.topRows(left_pad).cwiseAbs().maxCoeff(), count_nan(book.weights), count_nan(book.output));

  fmt::print("\n  (c) the same rows with PyTorch 1.13's softmax (exp(x - max) / sum, max = -inf)\n");
  const Matrix torch_weights = torch_1_13_softmax(left_scores);
  const Matrix torch_output = torch_weights * qkv.V;
  for (int64_t i = 0; i <= std::min<int64_t>(left_pad, seq_len - 1); ++i)
    fmt::print("    row {} ({:<5})  {}\n", i, left_labels[size_t(i)], row_str(torch_weights, i));
  fmt::print("    NaN entries: weights {} of {}, output {} of {}\n", count_nan(torch_weights), torch_weights.size(),
             count_nan(torch_output), torch_output.size());
  {
    // One more attention layer on top, with the same mask: the NaN rows are
    // masked keys now, yet 0 x NaN = NaN in the weighted sum of values.
    const QKV again_book = project_qkv(book.output, params.W_q, params.W_k, params.W_v);
    const Attention layer2_book = masked_attention(again_book.Q, again_book.K, again_book.V, left_causal);
    const QKV again_torch = project_qkv(torch_output, params.W_q, params.W_k, params.W_v);
    const Matrix layer2_torch_w =
        torch_1_13_softmax(apply_mask(scaled_scores(again_torch.Q, again_torch.K), left_causal));
    const Matrix layer2_torch = layer2_torch_w * again_torch.V;
    fmt::print("    a second masked attention layer on these outputs, same mask:\n");
    fmt::print("      PyTorch 1.13 semantics: NaN in {} of {} output entries ({} of {} rows)\n",
               count_nan(layer2_torch), layer2_torch.size(), (layer2_torch.array().isNaN().rowwise().any()).count(),
               seq_len);
    fmt::print("      the book:               NaN in {} of {} output entries\n", count_nan(layer2_book.output),
               layer2_book.output.size());
  }
  say("In PyTorch 1.13 a row with nothing to see becomes NaN, and NaN does not stay put: in the next layer those "
      "rows are keys that every query is forbidden to see, so their weight is exactly 0, but their values are NaN "
      "and 0 x NaN = NaN, so every output of the layer is NaN (and so are the loss and every gradient). The book "
      "defines the empty row instead: weights 0, output 0. Nothing is read, nothing is made up, and the rows "
      "that had something to see are unchanged.");

  fmt::print("\n  (d) an additive mask of -1e9 instead of -inf (seen in some code): row 0 gets\n");
  {
    Matrix additive = scores;
    for (int64_t i = 0; i < seq_len; ++i)
      for (int64_t j = 0; j < seq_len; ++j)
        if (!left_causal(i, j)) additive(i, j) += -1e9f;
    fmt::print("    {}   (uniform 1/{}: {})\n", row_str(softmax_rows(additive), 0), seq_len,
               seq_len > 1 ? "it attends to the padding and the future" : "its one key, the padding itself");
  }
  say("Finite, but wrong in silence: float32 cannot tell -1e9 + 0.3 from -1e9 - 0.2, so every masked score is the "
      "same number and softmax spreads the row evenly over exactly the keys it was told to ignore.");

  gap();
  fmt::print("Drawing figures\n");
  draw_figures(figures, fig);
  figures.summary();
  fmt::print("Next: chapter 6 drops attention weights at random while training (dropout).\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("05-causal-mask", [&] { run(argc, argv); });
}
