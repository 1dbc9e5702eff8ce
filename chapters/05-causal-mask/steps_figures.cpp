// Chapter 5's figures: mask, masked scores and weights side by side; the
// same scores without and with the mask; every head; the padded batch.
#include "05-causal-mask/steps.hpp"

#include "sa/plot.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace sa::ch5 {

// The cells' values are written while the cells are large enough to read
// them (sa::plot decides, from the cell size).
void draw_figures(Figures& figures, const FigureData& d) {
  figures.draw("causal_triptych.png", [&](const std::string& path) {
    // One token has nothing above the diagonal: no -inf, no zero weight.
    const bool one = d.tokens.size() == 1;
    plot::Heatmap mask;
    mask.title = "1. causal mask (1 = allowed)";
    mask.values = as_numbers(d.causal);
    // Two kinds of cell, named in a legend (a 0-to-1 colour bar would
    // suggest values in between).
    mask.categories = {"hidden (0)", "allowed (1)"};
    mask.category_colours = {"#f2f2f2", "#2171b5"};
    mask.decimals = 0;
    plot::Heatmap scores;
    scores.title = one ? "2. masked scores (nothing to mask)" : "2. masked scores (grey: -inf)";
    scores.values = d.masked_scores;
    scores.cblabel = "q.k / sqrt(d_k)";
    scores.diverging = true;
    scores.decimals = 2;
    plot::Heatmap weights = plot::weights_heatmap(
        one ? "3. softmax: weights (one key: 1)" : "3. softmax: weights (upper triangle 0)", d.causal_weights, d.tokens);
    weights.cblabel = "weight";
    for (plot::Heatmap* h : {&mask, &scores, &weights}) {
      h->row_labels = d.tokens;
      h->col_labels = d.tokens;
    }
    return plot::heatmap_grid(path,
                              one ? "Causal masking of one token: its only key is itself, so nothing is hidden"
                                  : "Causal masking: mask, scores with -inf above the diagonal, weights",
                              1, 3, {mask, scores, weights}, 520);
  });

  figures.draw("bidirectional_vs_causal.png", [&](const std::string& path) {
    plot::Heatmap bi = plot::weights_heatmap("bidirectional: every query sees every key", d.bidirectional_weights,
                                             d.tokens);
    plot::Heatmap causal = plot::weights_heatmap("causal: query i sees keys 0..i", d.causal_weights, d.tokens);
    for (plot::Heatmap* h : {&bi, &causal}) h->cblabel = "weight";
    return plot::heatmap_grid(path, "The same scores, without and with the causal mask (one head, d_k = d_model)", 1, 2,
                              {bi, causal}, 560);
  });

  figures.draw("multihead_causal.png", [&](const std::string& path) {
    const int64_t n = std::min(d.head_weights.heads(), kMaxHeadsShown);
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
      panels.push_back(p);
    }
    const int panel_px = n <= 4 ? 480 : 360;
    const int64_t all = d.head_weights.heads();
    const std::string heads = all == 1   ? "its one head"
                              : n == all ? "each of " + count_of(n, "head")
                                         : fmt::format("the first {} of {} heads", n, all);
    return plot::heatmap_grid(path, fmt::format("Causal attention in {} (d_k = {})", heads, d.d_k),
                              int(n / cols), int(cols), panels, panel_px);
  });

  figures.draw("padding_batch.png", [&](const std::string& path) {
    const int64_t batch = int64_t(d.lengths.size());
    std::vector<plot::Heatmap> panels;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t b = 0; b < batch; ++b) {
        // The keys the mask hides are drawn grey, without a number, as the
        // triptych draws -inf: a 0.00 there read as a weight that came out
        // small, and a sequence of length 0 as rows that sum to 0.
        const int64_t length = d.lengths[size_t(b)];
        Matrix shown = pass == 0 ? d.pad_weights[size_t(b)] : d.pad_causal_weights[size_t(b)];
        for (int64_t i = 0; i < shown.rows(); ++i)
          for (int64_t j = 0; j < shown.cols(); ++j)
            if (j >= length || (pass == 1 && j > i)) shown(i, j) = std::numeric_limits<float>::quiet_NaN();
        plot::Heatmap p = plot::weights_heatmap(
            fmt::format("length {}: {}", length, pass == 0 ? "padding mask" : "padding + causal"), shown,
            padded_labels(d.tokens, length));
        p.cblabel = "weight";
        panels.push_back(p);
      }
    return plot::heatmap_grid(path,
                              "A padded batch: weights per sequence (top: padding only; bottom: with causal; "
                              "grey: masked)",
                              2,
                              int(batch), panels, batch <= 4 ? 440 : 340);
  });
}

}  // namespace sa::ch5
