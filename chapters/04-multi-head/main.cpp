// Chapter 4: several attention heads side by side.
//
// Follows "the cat sat on the mat" through multi-head attention one shape at
// a time: project, split into heads (a view of the same numbers), scores,
// weights and outputs per head, combine, W_o. Then what the heads do
// differently (entropy and focus), the parameter count, the einsum reading of
// the same computation, cross-attention of 10 queries over 50 keys, and a
// batch of sequences.
#include "01-qkv-projection/qkv.hpp"
#include "02-scaling/scaling.hpp"
#include "03-softmax/softmax.hpp"
#include "04-multi-head/multihead.hpp"

#include "01-qkv-projection/running_example.hpp"
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
#include <tuple>

using namespace sa;

namespace {

struct Options {
  std::string text = "the cat sat on the mat";
  int64_t d_model = 64;
  int64_t n_heads = 4;
  int64_t batch = 2;
};

// The chapter's cross-attention example: a decoder's 10 positions looking at an
// encoder's 50.
constexpr int64_t kCrossQueries = 10;
constexpr int64_t kCrossKeys = 50;
// A grid of more heatmaps than this is unreadable; the figure shows the first ones.
constexpr int64_t kMaxPanels = 16;

// "[0.1234, -0.5678]": n consecutive floats.
std::string values_str(const float* p, int64_t n) {
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + format_value(p[i]);
  return s + "]";
}

// "  Q[0, 2, 16:20]               = [...]   note", labels aligned.
void values_line(const std::string& label, const float* p, int64_t n, const std::string& note) {
  fmt::print("  {:<28} = {}{}\n", label, values_str(p, n), note.empty() ? "" : "   " + note);
}

const char* yes_no(bool b) { return b ? "yes" : "no"; }

// What the heads of one attention look like, for the table and the bars.
struct HeadStats {
  double mean_entropy, min_entropy, max_entropy, focus;
  int64_t top_query, top_key;
  double top_weight;
};

HeadStats head_stats(const Matrix& w) {
  const auto H = row_entropy(w);
  HeadStats s{};
  s.min_entropy = *std::min_element(H.begin(), H.end());
  s.max_entropy = *std::max_element(H.begin(), H.end());
  for (double h : H) s.mean_entropy += h / double(H.size());
  s.focus = focus(w);
  s.top_weight = w.maxCoeff(&s.top_query, &s.top_key);
  return s;
}

// Grid layout (rows, cols) for n panels: one row up to 6, then 3 or 4 a
// row, whichever leaves fewer empty cells (4 on a tie).
std::pair<int, int> grid_for(int64_t n) {
  if (n <= 6) return {1, int(n)};
  const auto cells = [n](int64_t cols) { return (n + cols - 1) / cols * cols; };
  const int64_t cols = cells(3) < cells(4) ? 3 : 4;
  return {int((n + cols - 1) / cols), int(cols)};
}

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Tensor4& weights,
                  const std::vector<HeadStats>& stats, const Tensor4& cross_weights) {
  const int64_t seq_len = int64_t(tokens.size()), d_k = o.d_model / o.n_heads;
  figures.draw("head_weights.png", [&](const std::string& path) {
    const int64_t shown = std::min(o.n_heads, kMaxPanels);
    // One colour scale for every panel, so heads compare at a glance.
    float vmax = 0;
    for (int64_t h = 0; h < shown; ++h) vmax = std::max(vmax, weights.view(0, h).maxCoeff());
    std::vector<plot::Heatmap> panels;
    for (int64_t h = 0; h < shown; ++h) {
      plot::Heatmap p = plot::weights_heatmap(
          fmt::format("head {}: H = {:.3f}, focus = {:.3f}", h, stats[size_t(h)].mean_entropy, stats[size_t(h)].focus),
          weights.view(0, h), tokens);
      p.cblabel = "weight";
      p.vmax = vmax;  // the largest weight of any head: panels compare, and untrained heads are not washed out
      p.decimals = 2;
      panels.push_back(p);
    }
    const auto [rows, cols] = grid_for(shown);
    while (int64_t(panels.size()) < int64_t(rows) * cols) {  // pad the last row with empty panels
      plot::Heatmap empty = panels.back();
      empty.title = "(no more heads)";
      empty.values = Matrix::Zero(seq_len, seq_len);
      empty.annotate = false;
      panels.push_back(empty);
    }
    const std::string title =
        fmt::format("Attention weights of {} heads (d_k = {}){}, \"{}\", one colour scale 0 to {:.2f}", o.n_heads, d_k,
                    shown < o.n_heads ? fmt::format(", first {} shown", shown) : "", o.text, vmax);
    return plot::heatmap_grid(path, title, rows, cols, panels);
  });

  figures.draw("head_entropy_focus.png", [&](const std::string& path) {
    plot::BarChart c;
    const int64_t shown = std::min(o.n_heads, kMaxPanels);
    c.title = fmt::format("Per-head entropy and focus, {} heads of d_k = {}{} (untrained)", o.n_heads, d_k,
                          shown < o.n_heads ? fmt::format(", first {} shown", shown) : "");
    c.ylabel = "entropy (nats) / focus (weight)";
    std::vector<double> H, F;
    for (int64_t h = 0; h < shown; ++h) {
      c.categories.push_back(fmt::format("head {}", h));
      H.push_back(stats[size_t(h)].mean_entropy);
      F.push_back(stats[size_t(h)].focus);
    }
    c.groups.push_back({"mean entropy H (nats)", H});
    c.groups.push_back({fmt::format("log {} = {:.3f}: H of a uniform row", seq_len, std::log(double(seq_len))),
                        std::vector<double>(size_t(shown), std::log(double(seq_len)))});
    c.groups.push_back({"focus: mean largest weight", F});
    c.groups.push_back({fmt::format("1/{} = {:.3f}: focus of a uniform row", seq_len, 1.0 / double(seq_len)),
                        std::vector<double>(size_t(shown), 1.0 / double(seq_len))});
    return plot::bars(path, c, 1000, 600);
  });

  figures.draw("cross_attention.png", [&](const std::string& path) {
    std::vector<std::string> query_labels;
    for (int64_t i = 0; i < kCrossQueries; ++i) query_labels.push_back(std::to_string(i));
    plot::Heatmap h = plot::weights_heatmap(
        fmt::format("Cross-attention, head 0: {} queries over {} keys of another sequence (rows sum to 1; "
                    "uniform = 1/{} = {:.2f})",
                    kCrossQueries, kCrossKeys, kCrossKeys, 1.0 / kCrossKeys),
        cross_weights.view(0, 0), query_labels);
    h.vmax.reset();  // 50 keys: weights near 1/50, invisible on [0, 1]
    h.xlabel = "key (encoder position)";
    h.ylabel = "query (decoder position)";
    h.cblabel = "weight";
    h.annotate = false;
    h.col_labels.clear();  // the keys are another sequence: every 5th position labelled
    for (int64_t j = 0; j < kCrossKeys; ++j) h.col_labels.push_back(j % 5 == 0 ? std::to_string(j) : "");
    return plot::heatmap(path, h, 1400, 350);  // 10 x 50 square cells: a wide, low figure
  });
}

void run(int argc, char** argv) {
  Options o;
  Cli cli("04-multi-head",
          "Chapter 4: multi-head attention, one shape at a time: split Q, K and V into heads, attend in each head, "
          "combine, project with W_o; then the parameter count, the einsum reading, cross-attention and a batch.");
  cli.add("--text", &o.text, "the sentence to attend over (words split on spaces, at most 64 words)");
  cli.add("--d-model", &o.d_model, "width of a token vector (divisible by --n-heads)", IntRange{1, 4096});
  cli.add("--n-heads", &o.n_heads, "number of attention heads; each gets d_k = d_model / n_heads", IntRange{1, 4096});
  cli.add("--batch", &o.batch, "sequences in the batch of the last step (the sentence plus random ones)",
          IntRange{1, 64});
  cli.parse(argc, argv);
  if (o.d_model % o.n_heads != 0)
    throw UsageError(fmt::format("--d-model {} is not divisible by --n-heads {}: every head needs the same "
                                 "d_k = d_model / n_heads",
                                 o.d_model, o.n_heads));
  const auto tokens = tokenize_text(o.text);  // refuses an empty text before anything prints
  const int64_t seq_len = int64_t(tokens.size()), d_model = o.d_model, n_heads = o.n_heads;
  const int64_t d_k = d_model / n_heads;
  // The run against the budget: the four (d_model, d_model) projections are
  // the work; at the ranges' ends 3.7 s of CPU and 390 MB (one core).
  const double d2 = double(o.d_model) * double(o.d_model);
  cli.check_budget({0.5 + 2e-7 * d2, 24.0 * d2, fmt::format("--d-model {}", o.d_model)});

  Generator gen(cli.seed);
  Figures figures(cli);
  const PrintOptions wide{.max_cols = 8};

  chapter_title("Chapter 4: multi-head attention");
  fmt::print("text \"{}\", d_model {}, n_heads {}, d_k = d_model / n_heads = {}, batch {}, seed {}\n", o.text,
             d_model, n_heads, d_k, o.batch, cli.seed);

  // ---------------------------------------------------------------------
  step(1, "The input and the four projections");
  const EmbeddedText text = embed_text(gen, tokens, d_model);
  const Matrix& X = text.X;
  const AttentionParams params = make_attention_params(gen, d_model);
  fmt::print("  tokens  {}\n", tokens);
  print_shape("X = E + PE", {1, seq_len, d_model}, "(batch, seq, d_model), built as in chapter 1");
  for (const char* name : {"W_q", "W_k", "W_v", "W_o"})
    print_shape(name, {d_model, d_model},
                fmt::format("nn.Linear({}, {}), plus a bias of {}", d_model, d_model, d_model));
  say(fmt::format("Four layers of the same size, drawn in the order W_q, W_k, W_v, W_o like a PyTorch module that "
                  "defines them in that order. There is no per-head matrix anywhere: head h will own columns "
                  "{}h to {}h+{} of W_q, W_k and W_v, and the matching rows of W_o.",
                  d_k, d_k, d_k - 1));

  // ---------------------------------------------------------------------
  step(2, "Project once for all heads: Q, K and V");
  const QKV qkv = project_qkv(X, params.W_q, params.W_k, params.W_v);
  const Matrix& Q = qkv.Q;
  print_tensor("Q = X W_q + b_q", Q, {1, seq_len, d_model}, wide);
  print_shape("K = X W_k + b_k", {1, seq_len, d_model});
  print_shape("V = X W_v + b_v", {1, seq_len, d_model});
  if (n_heads > 1)
    say(fmt::format("One product with a ({0}, {0}) matrix, chapter 1's project_qkv, instead of {1} products with "
                    "({0}, {2}) matrices. The result is the same: column j of Q depends only on column j of W_q.",
                    d_model, n_heads, d_k));
  else
    say("With one head this is exactly chapter 1's projection; with more heads it would still be one product.");

  // ---------------------------------------------------------------------
  step(3, "Split into heads: a view of the same numbers");
  // The example element: head 1 (or 0), row 2 (or the last), 4 features.
  const int64_t h1 = std::min<int64_t>(1, n_heads - 1), r2 = std::min<int64_t>(2, seq_len - 1);
  const int64_t show = std::min<int64_t>(4, d_k), c0 = h1 * d_k;
  auto strides_line = [](const std::string& what, const Shape& shape, const Shape& strides) {
    fmt::print("  {:<22} shape {:<16} strides {}\n", what, shape_str(shape), shape_str(strides));
  };
  strides_line("Q", {1, seq_len, d_model}, {seq_len * d_model, d_model, 1});
  strides_line(fmt::format(".view(1, {}, {}, {})", seq_len, n_heads, d_k), {1, seq_len, n_heads, d_k},
               {seq_len * d_model, d_model, d_k, 1});
  strides_line(".transpose(1, 2)", {1, n_heads, seq_len, d_k}, {seq_len * d_model, d_k, d_model, 1});
  say(fmt::format("That is PyTorch's split: the view cuts each row of {} numbers into {} of {}, the "
                  "transpose swaps the seq and head dimensions. Neither moves a number; only the strides change. "
                  "Element [b, h, s, d] lives at offset b*{} + h*{} + s*{} + d of Q's storage.",
                  d_model, n_heads == 1 ? std::string("one piece") : fmt::format("{} pieces", n_heads), d_k,
                  seq_len * d_model, d_k, d_model));
  // Head h1 of Q as an Eigen view: a rectangle of Q, no copy.
  const auto head_view = Q.block(0, c0, seq_len, d_k);
  const float* q_elem = &Q(r2, c0);
  const float* v_elem = head_view.data() + r2 * head_view.outerStride();  // the view's row r2, column 0
  gap();
  values_line(fmt::format("Q[0, {}, {}:{}]", r2, c0, c0 + show), q_elem, show,
              fmt::format("offset {} in Q", q_elem - Q.data()));
  values_line(fmt::format("head {} view, row {} [0:{}]", h1, r2, show), v_elem, show,
              fmt::format("offset {} in Q, same address: {}", v_elem - Q.data(), yes_no(v_elem == q_elem)));
  fmt::print("  the view's row stride: {} floats (the seq stride above), its shape ({}, {})\n",
             head_view.outerStride(), head_view.rows(), head_view.cols());

  const Tensor4 Q_h = split_heads(Q, 1, n_heads);
  const Tensor4 K_h = split_heads(qkv.K, 1, n_heads);
  const Tensor4 V_h = split_heads(qkv.V, 1, n_heads);
  fmt::print("\n");
  print_shape("Q_h = split_heads(Q, 1, n_heads)", Q_h.shape(), "(batch, n_heads, seq, d_k)");
  print_shape("K_h", K_h.shape());
  print_shape("V_h", V_h.shape());
  const float* t_elem = Q_h.view(0, h1).data() + r2 * d_k;  // row r2 of head h1's contiguous block
  bool all_equal = true;  // every head equals its column block, bit for bit
  for (int64_t h = 0; h < n_heads; ++h) all_equal = all_equal && Q_h.view(0, h) == Q.block(0, h * d_k, seq_len, d_k);
  values_line(fmt::format("Q_h[0, {}, {}, 0:{}]", h1, r2, show), t_elem, show,
              fmt::format("offset {} in Q_h: a copy", t_elem - Q_h.data()));
  fmt::print("  every head equal to its column block of Q, bit for bit: {}\n", yes_no(all_equal));
  fmt::print("  Q_h.view(0, {}) points into Q_h's storage (no copy): {}\n", h1,
             yes_no(Q_h.view(0, h1).data() == Q_h.data() + h1 * seq_len * d_k));
  say(fmt::format("split_heads goes one step further than the view: it moves the numbers once so that each head "
                  "is one contiguous ({}, {}) block (strides {}, what PyTorch's .contiguous() would give). The "
                  "values are copied, never computed: the same bits. From then on view(b, h) is a plain Eigen map "
                  "of a head, and no later step copies to reshape.",
                  seq_len, d_k, shape_str(Shape{n_heads * seq_len * d_k, seq_len * d_k, d_k, 1})));
  print_tensor(fmt::format("head {} of Q = Q_h.view(0, {})", h1, h1), Matrix(Q_h.view(0, h1)), {seq_len, d_k}, wide);

  // ---------------------------------------------------------------------
  step(4, "Scores per head: Q_h K_h^T / sqrt(d_k)");
  Tensor4 scores(1, n_heads, seq_len, seq_len), weights(1, n_heads, seq_len, seq_len);
  Tensor4 head_out(1, n_heads, seq_len, d_k);
  for (int64_t h = 0; h < n_heads; ++h) scores.view(0, h) = scaled_scores(Q_h.view(0, h), K_h.view(0, h));
  print_shape("scores", scores.shape(), "(batch, n_heads, seq_q, seq_k)");
  if (n_heads > 1)
    say(fmt::format("Chapter 2's scaled_scores once per head. Each dot product now has d_k = {} terms, so the "
                    "scale is sqrt({}) = {:.4f}, not sqrt(d_model) = {:.4f}.",
                    d_k, d_k, std::sqrt(double(d_k)), std::sqrt(double(d_model))));
  else
    say(fmt::format("Chapter 2's scaled_scores. With one head d_k = d_model = {}, so the scale is sqrt({}) = {:.4f}, "
                    "as in chapter 2.",
                    d_k, d_k, std::sqrt(double(d_k))));
  print_labelled("scores[0, 0]", scores.view(0, 0), tokens, tokens);
  fmt::print("\n  {:>6}  {:>9}  {:>9}  {:>9}\n", "head", "min", "max", "std");
  for (int64_t h = 0; h < n_heads && h < kMaxPanels; ++h) {
    const auto s = scores.view(0, h);
    const double mean = s.cast<double>().mean();
    const double sd = std::sqrt((s.cast<double>().array() - mean).square().mean());
    fmt::print("  {:>6}  {:>9.4f}  {:>9.4f}  {:>9.4f}\n", h, s.minCoeff(), s.maxCoeff(), sd);
  }
  if (n_heads > kMaxPanels) fmt::print("  ... ({} more heads)\n", n_heads - kMaxPanels);

  // ---------------------------------------------------------------------
  step(5, "Weights per head: softmax along the keys");
  double worst_sum = 0;
  for (int64_t h = 0; h < n_heads; ++h) {
    weights.view(0, h) = softmax_rows(scores.view(0, h));
    for (int64_t i = 0; i < seq_len; ++i)
      worst_sum = std::max(worst_sum, std::abs(weights.view(0, h).row(i).cast<double>().sum() - 1.0));
  }
  print_shape("weights", weights.shape(), "(batch, n_heads, seq_q, seq_k)");
  const int64_t printed_heads = std::min<int64_t>(n_heads, 4);
  for (int64_t h = 0; h < printed_heads; ++h)
    print_labelled(fmt::format("weights[0, {}]", h), weights.view(0, h), tokens, tokens);
  if (n_heads > printed_heads) fmt::print("  ... ({} more heads)\n", n_heads - printed_heads);
  fmt::print("  every row of every head sums to 1: largest |row sum - 1| {}\n", rounding(worst_sum, 1e-6));
  if (n_heads > 1)
    say(fmt::format("{} separate attention patterns over the same {} tokens, one per head: a pair of tokens now "
                    "gets {} weights instead of one, each decided in its own {}-dimensional subspace.",
                    n_heads, seq_len, n_heads, d_k));
  else
    say("One head, one attention pattern: chapter 3's, over all the columns.");

  // ---------------------------------------------------------------------
  step(6, "Per-head outputs: weights_h V_h");
  for (int64_t h = 0; h < n_heads; ++h) head_out.view(0, h) = weights.view(0, h) * V_h.view(0, h);
  print_shape("head outputs", head_out.shape(), "(batch, n_heads, seq, d_k)");
  print_tensor(fmt::format("head outputs[0, {}]", h1), Matrix(head_out.view(0, h1)), {seq_len, d_k}, wide);
  say(fmt::format("Each head averages its own {}-wide slice of V: row i of head h mixes the value slices of "
                  "the tokens that head h's query i attends to.",
                  d_k));

  // ---------------------------------------------------------------------
  step(7, "Combine the heads: back to one row per token");
  const Matrix combined = combine_heads(head_out);
  print_tensor("combined = combine_heads(head outputs)", combined, {1, seq_len, d_model}, wide);
  values_line(fmt::format("head outputs[0, {}, {}, 0:{}]", h1, r2, show), &head_out.view(0, h1)(r2, 0), show, "");
  values_line(fmt::format("combined[0, {}, {}:{}]", r2, c0, c0 + show), &combined(r2, c0), show,
              fmt::format("head {} sits in columns {} to {}", h1, c0, c0 + d_k - 1));
  fmt::print("  combine_heads(split_heads(Q)) == Q, bit for bit: {}\n", yes_no(combine_heads(Q_h) == Q));
  say("This is Concat(head_0, ..., head_{n_heads-1}): each token's row holds its head vectors side by side, the exact "
      "inverse of the split (PyTorch: transpose(1, 2), then contiguous().view(batch, seq, d_model)).");

  // ---------------------------------------------------------------------
  step(8, "The output projection W_o");
  const Matrix output = linear(combined, params.W_o);
  print_tensor("output = combined W_o + b_o", output, {1, seq_len, d_model}, wide);
  if (n_heads > 1)
    say(fmt::format("Up to here no head has seen another head's numbers. W_o is where they meet: every output "
                    "column is a weighted sum over all {} columns, so all {} heads.",
                    d_model, n_heads));
  else
    say(fmt::format("Every output column is a weighted sum over all {} columns of the one head's output.", d_model));

  // ---------------------------------------------------------------------
  step(9, "All of it in one call: multi_head_attention");
  const MultiHead mh = multi_head_attention(X, X, 1, params, n_heads);
  double weights_diff = 0;
  for (int64_t h = 0; h < n_heads; ++h)
    weights_diff = std::max(weights_diff, double((mh.weights.view(0, h) - weights.view(0, h)).cwiseAbs().maxCoeff()));
  print_shape("multi_head_attention(X, X, 1, params, n_heads).output", {1, seq_len, d_model});
  print_shape("multi_head_attention(X, X, 1, params, n_heads).weights", mh.weights.shape());
  fmt::print("  largest difference from steps 5 and 8: weights {}, output {}\n", rounding(weights_diff, 1e-6),
             rounding((mh.output - output).cwiseAbs().maxCoeff(), rounding_bound(output.cwiseAbs().maxCoeff())));
  fmt::print("\n  The whole journey, batch 1:\n");
  const std::vector<std::pair<std::string, Shape>> journey{
      {"X", {1, seq_len, d_model}},
      {"Q, K, V = X W + b", {1, seq_len, d_model}},
      {"split into heads", {1, n_heads, seq_len, d_k}},
      {fmt::format("scores Q K^T / sqrt({})", d_k), {1, n_heads, seq_len, seq_len}},
      {"weights softmax(scores)", mh.weights.shape()},
      {"head outputs weights V", {1, n_heads, seq_len, d_k}},
      {"combined", {1, seq_len, d_model}},
      {"output = combined W_o + b_o", {1, seq_len, d_model}},
  };
  for (const auto& [what, shape] : journey) fmt::print("    {:<30} {}\n", what, shape_str(shape));

  // ---------------------------------------------------------------------
  step(10, "What each head does: entropy and focus");
  std::vector<HeadStats> stats;
  for (int64_t h = 0; h < n_heads; ++h) stats.push_back(head_stats(mh.weights.view(0, h)));
  const Attention single = attention(Q, qkv.K, qkv.V);  // one head over all d_model columns
  const HeadStats one = head_stats(single.weights);
  const double log_n = std::log(double(seq_len));
  fmt::print("  {:<18} {:>8} {:>8} {:>8} {:>10} {:>7}   {}\n", "", "mean H", "min H", "max H", "H / log n", "focus",
             "strongest weight");
  auto stats_row = [&](const std::string& name, const HeadStats& s) {
    // One key: log n = 0, and H / log n is 0/0 (shown as -).
    fmt::print("  {:<18} {:>8.4f} {:>8.4f} {:>8.4f} {:>10} {:>7.4f}   {} -> {} {:.4f}\n", name, s.mean_entropy,
               s.min_entropy, s.max_entropy, log_n > 0 ? fmt::format("{:.4f}", s.mean_entropy / log_n) : "-", s.focus,
               tokens[size_t(s.top_query)], tokens[size_t(s.top_key)], s.top_weight);
  };
  for (int64_t h = 0; h < n_heads && h < kMaxPanels; ++h) stats_row(fmt::format("head {}", h), stats[size_t(h)]);
  if (n_heads > kMaxPanels) fmt::print("  ... ({} more heads)\n", n_heads - kMaxPanels);
  stats_row(fmt::format("one head, d_k {}", d_model), one);
  fmt::print("  {:<18} {:>8.4f} {:>8} {:>8} {:>10} {:>7.4f}\n", "uniform row", log_n, "", "", log_n > 0 ? "1.0000" : "-",
             1.0 / double(seq_len));
  say(fmt::format("Entropy in nats (log {} = {:.4f} is the most a row over {} keys can have) and focus, the mean "
                  "largest weight (1/{} = {:.4f} for uniform rows, 1 for one-hot). The last row but one is "
                  "chapter 3's single attention over all {} columns, for comparison. Untrained, the weights "
                  "are drawn at random, so whatever differs between heads is chance. Training is what makes them specialise: "
                  "chapter 7 trains heads like these and measures how far their entropy falls.",
                  seq_len, log_n, seq_len, seq_len, 1.0 / double(seq_len), d_model));

  // ---------------------------------------------------------------------
  step(11, "Counting the parameters: more heads cost nothing");
  const int64_t weight_count = 4 * d_model * d_model, bias_count = 4 * d_model;
  fmt::print("  W_q, W_k, W_v, W_o   4 x {} x {} = {}\n", d_model, d_model, weight_count);
  fmt::print("  their biases         4 x {}      = {}\n", d_model, bias_count);
  fmt::print("  total                4 d_model^2 + 4 d_model = {}   (counted from the layers: {})\n",
             weight_count + bias_count, params.parameter_count());
  fmt::print("  per head: a ({}, {}) slice of each of W_q, W_k, W_v = 3 x {} x {} = {}; x {} heads = {} = 3 "
             "d_model^2\n",
             d_model, d_k, d_model, d_k, 3 * d_model * d_k, n_heads, 3 * n_heads * d_model * d_k);
  fmt::print("\n  {:>8} {:>6}  {:>17}  {:>17}  {:>20}\n", "n_heads", "d_k", "parameters", "without biases",
             "score products");
  for (int64_t h = 1; h <= d_model; ++h) {
    if (d_model % h != 0) continue;
    const int64_t dk = d_model / h;
    // Every head of every configuration uses the same four (d_model, d_model)
    // layers; only the way their columns are grouped changes.
    fmt::print("  {:>8} {:>6}  {:>17}  {:>17}  {:>20}{}\n", h, dk, 4 * d_model * d_model + 4 * d_model,
               4 * d_model * d_model, fmt::format("{} x {}^2 x {} = {}", h, seq_len, dk, h * seq_len * seq_len * dk),
               h == n_heads ? "   <- this run" : h == 1 ? "   <- one head of width d_model" : "");
  }
  if (n_heads == 1)
    say(fmt::format("One head of {} has {} parameters, and the table shows that any split into more heads has the "
                    "same: multi-head attention does not add weights, it regroups them. What grows with the heads is "
                    "the number of attention maps, n_heads x seq^2 weights.",
                    d_model, weight_count + bias_count));
  else
    say(fmt::format("{} of {} and one head of {} have the same {} parameters: multi-head attention does not "
                  "add weights, it regroups them. The work of the scores is the same too (n_heads x seq^2 x d_k "
                  "= seq^2 x d_model multiplications). What grows with the heads is the number of attention maps, "
                  "n_heads x seq^2 weights, and what each map can express: one routing decision per head.",
                  fmt::format("{} heads", n_heads), d_k, d_model,
                  weight_count + bias_count));

  // ---------------------------------------------------------------------
  step(12, "The einsum reading: name every index");
  fmt::print("  {:<7} {:<36} {}\n", "letter", "index over", "size here");
  const std::vector<std::tuple<char, std::string, int64_t>> letters{
      {'b', "batch (which sequence)", 1},          {'h', "head", n_heads},
      {'q', "query position", seq_len},            {'k', "key position", seq_len},
      {'d', "feature inside a head (d_k)", d_k},   {'m', "model feature (d_model)", d_model}};
  for (const auto& [letter, meaning, size] : letters) fmt::print("  {:<7} {:<36} {}\n", letter, meaning, size);
  fmt::print("\n");
  const std::vector<std::pair<std::string, std::string>> einsums{
      {"Q       = einsum(\"bqm,mhd->bhqd\", X, W_q) + b_q", "W_q read as (m, h, d): the split is free"},
      {"scores  = einsum(\"bhqd,bhkd->bhqk\", Q, K) / sqrt(d)", "sum over d: one dot product per b, h, q, k"},
      {"weights = softmax(scores) along k", "every (b, h, q) row sums to 1"},
      {"heads   = einsum(\"bhqk,bhkd->bhqd\", weights, V)", "sum over k: a weighted average of values"},
      {"output  = einsum(\"bhqd,hdm->bqm\", heads, W_o) + b_o", "sum over h and d: combine and W_o at once"}};
  for (const auto& [formula, note] : einsums) fmt::print("  {:<52} {}\n", formula, note);
  say("An index that appears in the inputs but not after the arrow is summed over. Written like this the split "
      "and the combine disappear: feature d of head h is simply column m = h * d_k + d of the unsplit Q, and "
      "W_o read as (h, d, m) is W_o cut into one block of rows per head. Checked with plain loops on the "
      "unsplit matrices:");
  {
    // "bhqd,bhkd->bhqk" straight from the formula, reading head h's feature
    // d at column h * d_k + d of the unsplit Q and K.
    double diff = 0;
    for (int64_t h = 0; h < n_heads; ++h)
      for (int64_t q = 0; q < seq_len; ++q)
        for (int64_t k = 0; k < seq_len; ++k) {
          double dot = 0;
          for (int64_t d = 0; d < d_k; ++d) dot += double(Q(q, h * d_k + d)) * double(qkv.K(k, h * d_k + d));
          diff = std::max(diff, std::abs(dot / std::sqrt(double(d_k)) - double(scores(0, h, q, k))));
        }
    fmt::print("  loops over \"bhqd,bhkd->bhqk\" vs step 4's scores:  largest difference {}\n",
               rounding(diff, rounding_bound(Eigen::Map<const Eigen::ArrayXf>(scores.data(), scores.size())
                                                 .abs()
                                                 .maxCoeff())));
    // "bhqd,hdm->bqm": row h * d_k + d of W_o belongs to head h, feature d.
    diff = 0;
    for (int64_t q = 0; q < seq_len; ++q)
      for (int64_t m = 0; m < d_model; ++m) {
        double sum = (*params.W_o.b)(m);
        for (int64_t h = 0; h < n_heads; ++h)
          for (int64_t d = 0; d < d_k; ++d) sum += double(head_out(0, h, q, d)) * double(params.W_o.W(h * d_k + d, m));
        diff = std::max(diff, std::abs(sum - double(output(q, m))));
      }
    fmt::print("  loops over \"bhqd,hdm->bqm\" vs step 8's output:   largest difference {}\n",
               rounding(diff, rounding_bound(output.cwiseAbs().maxCoeff())));
    fmt::print("  (double-precision loops against float32 products: rounding only)\n");
  }

  // ---------------------------------------------------------------------
  step(13, fmt::format("Cross-attention: {} queries over {} keys from another sequence", kCrossQueries, kCrossKeys));
  say(fmt::format("In a translation model the decoder's positions ask the questions and the encoder's positions "
                  "answer them: Q comes from one sequence, K and V from another. Stand-ins here: {} decoder "
                  "states and {} encoder states drawn from N(0, 1) by the same generator, attended with the same "
                  "four layers.",
                  kCrossQueries, kCrossKeys));
  const Matrix X_dec = gen.randn(kCrossQueries, d_model);
  const Matrix X_enc = gen.randn(kCrossKeys, d_model);
  print_shape("X_q  (decoder)", {1, kCrossQueries, d_model});
  print_shape("X_kv (encoder)", {1, kCrossKeys, d_model});
  // Chapter 3's attention, reporting what one head receives: the hook that
  // chapters 5 and 6 use for masks and dropout.
  int64_t calls = 0;
  auto reporting_head = [&](const Matrix& q, const Matrix& k, const Matrix& v, int64_t b) {
    const Attention a = attention(q, k, v);
    if (calls++ == 0)
      fmt::print("  one head of sequence {} receives Q {}, K {}, V {}\n"
                 "  and returns weights {}, output {}\n",
                 b, shape_str(q), shape_str(k), shape_str(v), shape_str(a.weights), shape_str(a.output));
    return a;
  };
  const MultiHead cross = multi_head_attention(X_dec, X_enc, 1, params, n_heads, reporting_head);
  fmt::print("  calls of the head attention: {} (batch 1 x {} heads)\n", calls, n_heads);
  const std::vector<std::pair<std::string, Shape>> cross_journey{
      {"Q = X_q W_q + b_q", {1, kCrossQueries, d_model}},
      {"K, V = X_kv W + b", {1, kCrossKeys, d_model}},
      {"Q split into heads", {1, n_heads, kCrossQueries, d_k}},
      {"K, V split into heads", {1, n_heads, kCrossKeys, d_k}},
      {"scores, weights", cross.weights.shape()},
      {"head outputs weights V", {1, n_heads, kCrossQueries, d_k}},
      {"output", {1, cross.output.rows(), cross.output.cols()}},
  };
  for (const auto& [what, shape] : cross_journey) fmt::print("    {:<30} {}\n", what, shape_str(shape));
  print_tensor("cross weights[0, 0]", Matrix(cross.weights.view(0, 0)), {kCrossQueries, kCrossKeys},
               {.precision = 4, .max_rows = 6, .max_cols = 8});
  double cross_worst = 0;
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t i = 0; i < kCrossQueries; ++i)
      cross_worst = std::max(cross_worst, std::abs(cross.weights.view(0, h).row(i).cast<double>().sum() - 1.0));
  fmt::print("  every row sums to 1 over the {} keys: largest |row sum - 1| {}\n", kCrossKeys,
             rounding(cross_worst, 1e-6));
  fmt::print("  {:>6}  {:>8}  {:>8}   (uniform: H = log {} = {:.4f}, focus 1/{} = {:.4f})\n", "head", "mean H", "focus",
             kCrossKeys, std::log(double(kCrossKeys)), kCrossKeys, 1.0 / kCrossKeys);
  for (int64_t h = 0; h < n_heads && h < kMaxPanels; ++h) {
    const HeadStats s = head_stats(cross.weights.view(0, h));
    fmt::print("  {:>6}  {:>8.4f}  {:>8.4f}\n", h, s.mean_entropy, s.focus);
  }
  say(fmt::format("The output has one row per query, ({}, {}), whatever the number of keys: the keys decide where "
                  "the information comes from, the queries how many answers there are. The weights are a "
                  "{} x {} rectangle, not a square.",
                  kCrossQueries, d_model, kCrossQueries, kCrossKeys));

  // ---------------------------------------------------------------------
  step(14, fmt::format("A batch of {} sequence{}", o.batch, o.batch == 1 ? "" : "s"));
  Matrix X_batch(o.batch * seq_len, d_model);
  X_batch.topRows(seq_len) = X;
  for (int64_t b = 1; b < o.batch; ++b) X_batch.middleRows(b * seq_len, seq_len) = gen.randn(seq_len, d_model);
  say(fmt::format("Sequence 0 is the sentence, {} random N(0, 1) sequence{} of {} tokens. The batch is one "
                  "matrix of batch x seq = {} rows, so each projection is still one product.",
                  o.batch == 1 ? "and no other" : fmt::format("followed by {}", o.batch - 1),
                  o.batch == 2 ? "" : "s", seq_len, o.batch * seq_len));
  const MultiHead batched = multi_head_attention(X_batch, X_batch, o.batch, params, n_heads);
  print_shape("X", {o.batch, seq_len, d_model}, fmt::format("stored as ({}, {})", X_batch.rows(), X_batch.cols()));
  print_shape("Q, K, V split into heads", {o.batch, n_heads, seq_len, d_k});
  print_shape("weights", batched.weights.shape());
  print_shape("output", {o.batch, seq_len, d_model},
              fmt::format("stored as ({}, {})", batched.output.rows(), batched.output.cols()));
  double seq0 = 0;
  for (int64_t h = 0; h < n_heads; ++h)
    seq0 = std::max(seq0, double((batched.weights.view(0, h) - mh.weights.view(0, h)).cwiseAbs().maxCoeff()));
  fmt::print("  sequence 0 in the batch vs alone (step 9): difference in the weights {}, in the output {}\n",
             rounding(seq0, 1e-6),
             rounding((batched.output.topRows(seq_len) - mh.output).cwiseAbs().maxCoeff(),
                      rounding_bound(mh.output.cwiseAbs().maxCoeff())));
  say("The sequences share the parameters and nothing else: weights are computed inside each (sequence, head) "
      "pair, so no token ever attends to another sequence, and adding sequences to the batch changes no "
      "sequence's result.");
  say("(A difference below the bound is float32 rounding: a product over more rows may be summed in another "
      "order, and on some CPUs the two agree exactly.)");

  gap();
  fmt::print("Drawing figures\n");
  draw_figures(figures, o, tokens, mh.weights, stats, cross.weights);
  figures.summary();
  fmt::print("Next: chapter 5 hides the future from every head with a causal mask.\n");
}

}  // namespace

int main(int argc, char** argv) {
  return run_program("04-multi-head", [&] { run(argc, argv); });
}
