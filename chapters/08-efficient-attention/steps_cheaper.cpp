// Chapter 8, step 7: two attentions cheaper than seq_len², local and linear,
// measured against full causal attention.
#include "03-softmax/softmax.hpp"
#include "05-causal-mask/mask.hpp"
#include "08-efficient-attention/efficient.hpp"
#include "08-efficient-attention/measure.hpp"
#include "08-efficient-attention/steps.hpp"

#include "sa/plot.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
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

}  // namespace

void cheaper_demo(const Small& small, const Large& large, const Options& o, Figures& figures) {
  constexpr int64_t T = Small::seq_len, w = 3;
  say(fmt::format("Local attention lets query i see only its last `window` keys, i - window + 1 .. i: a band "
                  "instead of a triangle, O(seq_len * window) work. For the small example, window {}:",
                  w));
  const Mask band = sliding_window_mask(T, w);
  print_labelled("sliding_window_mask(10, 3) (1 = visible)", as_matrix(band), positions(T), positions(T),
                 {.precision = 0});
  const Matrix local = local_attention(small.Q, small.K, small.V, w);
  const Attention masked = masked_attention(small.Q, small.K, small.V, band);
  fmt::print("  local_attention on the band alone against chapter 5's masked_attention with this mask: largest "
             "difference {:.1e}\n",
             (local - masked.output).cwiseAbs().maxCoeff());
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

  // The masks side by side, on 16 positions and a window of 4.
  figures.draw("window_masks.png", [&](const std::string& path) {
    constexpr int64_t n = 16, window = 4;
    auto panel = [&](const std::string& title, const Mask& m) {
      plot::Heatmap h;
      h.title = title;
      h.values = as_matrix(m);
      h.row_labels = h.col_labels = positions(n);
      h.cblabel = "visible";
      h.vmin = 0;
      h.vmax = 1;
      h.annotate = false;
      return h;
    };
    return plot::heatmap_grid(path, "Which keys a query sees: causal against a sliding window of 4 (16 positions)",
                              1, 2,
                              {panel("causal: keys 0..i, i + 1 of them", causal_mask(n)),
                               panel("sliding window: keys i-3..i, at most 4", sliding_window_mask(n, window))},
                              460);
  });
}

}  // namespace sa::ch8
