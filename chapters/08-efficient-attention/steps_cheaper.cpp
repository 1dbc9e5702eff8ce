// Chapter 8, step 7: two attentions cheaper than seq_len², local and linear,
// measured against full causal attention.
#include "03-softmax/softmax.hpp"
#include "05-causal-mask/mask.hpp"
#include "07-training/model.hpp"
#include "07-training/reversal.hpp"
#include "08-efficient-attention/efficient.hpp"
#include "sa/measure.hpp"
#include "08-efficient-attention/steps.hpp"

#include "sa/plot.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch8 {

namespace {

Matrix as_matrix(const Mask& m) { return m.cast<float>(); }

std::vector<std::string> positions(int64_t n) {
  std::vector<std::string> p;
  for (int64_t i = 0; i < n; ++i) p.push_back(std::to_string(i));
  return p;
}

// Chapter 7's reversal task trained from the seed with full causal
// attention or a window of w keys: the held-out token accuracy after
// `epochs` epochs (the setup of chapter 7: 5000 samples, batch 128, Adam
// 3e-4, 2 layers of 4 heads, d_model 32).
double reversal_accuracy(uint64_t seed, int64_t window, int64_t epochs) {
  Generator gen(seed);
  ReversalTask task;
  ModelConfig cfg;
  cfg.max_seq = task.sample_len();
  cfg.window = window;
  TinyTransformer model(cfg, gen);
  const ReversalData train = make_reversal_data(gen, 5000, task), test = make_reversal_data(gen, 500, task);
  Adam adam(model.params, model.grads, AdamConfig{});
  std::vector<int64_t> ids, targets;
  constexpr int64_t batch = 128;
  for (int64_t e = 0; e < epochs; ++e) {
    const std::vector<int64_t> perm = gen.randperm(train.count);
    for (int64_t b = 0; b < train.count; b += batch) {
      const int64_t n = std::min(batch, train.count - b);
      make_batch(train, std::span<const int64_t>(perm).subspan(size_t(b), size_t(n)), task, ids, targets);
      train_step(model, adam, ids, targets, n);
    }
  }
  return evaluate(model, test, task, ids, targets).percent();
}

}  // namespace

void local_on_reversal(uint64_t seed, int64_t epochs, Figures& figures) {
  const ReversalTask task;
  const int64_t D = task.digits;
  say(fmt::format("What a window costs a trained model: chapter 7's reversal task (reverse {} tokens after SEP), "
                  "its model and its training, {} from the seed, with full causal attention and with "
                  "windows of w keys. The first output token, just after SEP, must copy the last input token, 1 "
                  "position back; the last one must copy the first, {} positions back. Each of the 2 layers reaches "
                  "w - 1 positions further, so a window below {} cannot carry the first token to the last output "
                  "at all.",
                  D, count_of(epochs, "epoch"), 2 * D - 1, D + 1));
  const int64_t layers = ModelConfig{}.n_layers, symbols = task.vocab - 2;  // digits are drawn from 2 .. vocab-1
  std::vector<std::string> names;
  std::vector<double> accuracy, ceiling;
  fmt::print("  {:<12}  {:>22}  {:>9}  {:>9}\n", "attention", "outputs within reach", "ceiling", "accuracy");
  for (const int64_t w : {int64_t(0), 2 * D, D + 1, D / 2 + 1, int64_t(2)}) {
    // Output k (0-based) copies the token 2k + 1 positions back; `layers`
    // layers of window w reach layers * (w - 1) back. An output out of reach
    // is a guess among the symbols.
    int64_t reachable = 0;
    for (int64_t k = 0; k < D; ++k) reachable += w == 0 || 2 * k + 1 <= layers * (w - 1);
    const double best = 100.0 * (double(reachable) + double(D - reachable) / double(symbols)) / double(D);
    const double acc = reversal_accuracy(seed, w, epochs);
    names.push_back(w == 0 ? std::string("full causal") : fmt::format("window {}", w));
    accuracy.push_back(acc);
    ceiling.push_back(best);
    fmt::print("  {:<12}  {:>22}  {:>8.1f}%  {:>8.2f}%\n", names.back(), fmt::format("{} of {}", reachable, D), best,
               acc);
  }
  std::string learned;
  if (accuracy.front() < 90.0)
    learned = fmt::format("After {} not even full attention has learned the task ({:.1f}%): compare with "
                          "--reversal-epochs 10 or more.",
                          count_of(epochs, "epoch"), accuracy.front());
  else if (accuracy[2] + 1.0 < accuracy.front())
    learned = fmt::format("A window that reaches every copy lifts the cap, but the far copies must now pass through "
                          "both layers, which is slower to learn: after {} window {} is at {:.1f}% where full "
                          "attention is at {:.1f}%.",
                          count_of(epochs, "epoch"), D + 1, accuracy[2], accuracy.front());
  else
    learned = fmt::format("A window that reaches every copy lifts the cap: window {} is as good as full attention "
                          "after {}.",
                          D + 1, count_of(epochs, "epoch"));
  say(fmt::format("'ceiling': the accuracy if every output within reach were right and the others guessed among "
                  "{} symbols. A window too short for the longest copies caps the accuracy whatever the training "
                  "(w = 2: ceiling {:.1f}%, measured {:.1f}%). {} Local attention is cheap only for tasks whose "
                  "dependencies are local.",
                  symbols, ceiling.back(), accuracy.back(), learned));
  figures.draw("local_reversal.png", [&](const std::string& path) {
    plot::BarChart c;
    c.title = fmt::format("Chapter 7's reversal task after {}: full causal attention against sliding windows",
                          count_of(epochs, "epoch"));
    c.ylabel = "held-out token accuracy (%)";
    c.categories = names;
    // To 0.1%, as the table prints them: the labels take every digit they
    // are given, and three decimals ran into each other ("100.000100.000").
    const auto tenths = [](std::vector<double> v) {
      for (double& x : v) x = std::round(x * 10) / 10;
      return v;
    };
    c.groups = {{"ceiling: outputs within reach right, the rest guessed", tenths(ceiling)},
                {"measured", tenths(accuracy)}};
    c.hlines = {{100.0 / double(task.vocab - 2), "chance"}};
    return plot::bars(path, c);
  });
}

void cheaper_demo(const Small& small, const Large& large, const Options& o, Figures& figures) {
  constexpr int64_t T = Small::seq_len, w = 3;
  say(fmt::format("Local attention lets query i see only its last `window` keys, i - window + 1 .. i: a band "
                  "instead of a triangle, O(seq_len * window) work. For the small example, window {}:",
                  w));
  const Mask band = sliding_window_mask(T, w);
  print_labelled(fmt::format("sliding_window_mask({}, {}) (1 = visible)", T, w), as_matrix(band), positions(T),
                 positions(T), {.precision = 0});
  const Matrix local = local_attention(small.Q, small.K, small.V, w);
  const Attention masked = masked_attention(small.Q, small.K, small.V, band);
  fmt::print("  local_attention on the band alone against chapter 5's masked_attention with this mask: largest "
             "difference {}\n",
             rounding((local - masked.output).cwiseAbs().maxCoeff(), 1e-6));
  say("Linear attention replaces exp(q . k / sqrt(d_k)) by phi(q) . phi(k) with phi(x) = elu(x) + 1, which is "
      "positive. Then sum_j phi(q_i) . phi(k_j) v_j = phi(q_i) S_i with S_i = sum_{j <= i} phi(k_j)^T v_j, a "
      "(d_k, d_v) running sum: O(seq_len d_k d_v) work, and no seq_len^2 anywhere. It is another attention, not "
      "an approximation of the softmax one.");
  print_tensor("linear_attention(Q, K, V)", linear_attention(small.Q, small.K, small.V), {T, Small::d_k});

  const int64_t N = large.Q.rows();
  TiledAttention full;
  Matrix loc, lin;
  const double full_ms = measure::median_ms([&] { full = tiled_attention(large.Q, large.K, large.V, true, o.block); }, 0.2);
  const double local_ms = measure::median_ms([&] { loc = local_attention(large.Q, large.K, large.V, o.window); }, 0.2);
  const double linear_ms = measure::median_ms([&] { lin = linear_attention(large.Q, large.K, large.V); }, 0.2);
  say(fmt::format("At seq_len {}, d_k {}, against full causal attention (tiled). Q and K are random here, with no "
                  "structure either shortcut could exploit: the differences say how much each changes the output, "
                  "not how well a model trained with it would do.",
                  N, o.d_k));
  auto row = [&](const std::string& name, double ms, const Matrix* out) {
    const std::string diffs = out ? fmt::format("{:>12.4f}  {:>12.4f}", (*out - full.output).cwiseAbs().maxCoeff(),
                                                (*out - full.output).cwiseAbs().mean())
                                  : fmt::format("{:>12}  {:>12}", "-", "-");
    fmt::print("  {:<26} {:>12}  {}\n", name, fmt::format("{:.3f} ms", ms), diffs);
  };
  fmt::print("  {:<26} {:>12}  {:>12}  {:>12}\n", "attention", "time", "largest diff", "mean diff");
  row("full causal (tiled)", full_ms, nullptr);
  row(fmt::format("local, window {}", o.window), local_ms, &loc);
  row("linear, elu(x) + 1", linear_ms, &lin);
  if (o.window >= N)
    say(fmt::format("The window ({}) covers all {} keys: local attention is full causal attention here.", o.window, N));

  // The masks side by side, on the small example's positions and window:
  // the mask printed above, drawn.
  figures.draw("window_masks.png", [&](const std::string& path) {
    constexpr int64_t n = T, window = w;
    auto panel = [&](const std::string& title, const Mask& m) {
      plot::Heatmap h;
      h.title = title;
      h.values = as_matrix(m);
      h.row_labels = h.col_labels = positions(n);
      // Two kinds of cell, named in a legend (a 0-to-1 colour bar would
      // suggest values in between).
      h.categories = {"hidden", "visible"};
      h.category_colours = {"#f2f2f2", "#2171b5"};
      h.annotate = false;
      return h;
    };
    return plot::heatmap_grid(
        path,
        fmt::format("Which keys a query sees: causal against a sliding window of {} ({} positions, step 7's mask)",
                    window, n),
        1, 2,
        {panel("causal: keys 0..i, i + 1 of them", causal_mask(n)),
         panel(fmt::format("sliding window: keys i-{}..i, at most {}", window - 1, window),
               sliding_window_mask(n, window))},
        460);
  });
}

}  // namespace sa::ch8
