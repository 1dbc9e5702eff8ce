// Chapter 4's figures: every head's weights on one colour scale, the heads'
// entropy and focus, and the cross-attention weights.
#include "04-multi-head/steps.hpp"

#include "sa/plot.hpp"
#include "sa/printable.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace sa::ch4 {

namespace {

// Grid layout (rows, cols) for n panels: one row up to 6, then 3 or 4 a
// row, whichever leaves fewer empty cells (4 on a tie).
std::pair<int, int> grid_for(int64_t n) {
  if (n <= 6) return {1, int(n)};
  const auto cells = [n](int64_t cols) { return (n + cols - 1) / cols * cols; };
  const int64_t cols = cells(3) < cells(4) ? 3 : 4;
  return {int((n + cols - 1) / cols), int(cols)};
}

}  // namespace

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
        fmt::format("Attention weights of {} (d_k = {}){}, \"{}\", one colour scale 0 to {:.2f}",
                    count_of(o.n_heads, "head"), d_k,
                    shown < o.n_heads ? fmt::format(", first {} shown", shown) : "",
                    printable(o.text, 60), vmax);  // (a text of 64 long words made the figure 4400 pixels wide)
    return plot::heatmap_grid(path, title, rows, cols, panels);
  });

  figures.draw("head_entropy_focus.png", [&](const std::string& path) {
    const int64_t shown = std::min(o.n_heads, kMaxPanels);
    // Two charts, each on its own axis: entropy in nats runs to log n, focus
    // (a weight) from 1/n to 1; on one axis the focus bars were stubs. What a
    // uniform row would give is the same for every head: a dashed reference
    // line, named in the title (a label at its end would take the room of
    // several bars).
    const double n = double(seq_len);
    plot::BarChart entropy, focus;
    // With one token every row is uniform and H = log 1 = 0: a dashed line
    // there would lie on the axis, unseen, so the title says it in words.
    entropy.title = "Entropy H, mean over the rows\n";
    entropy.title += seq_len == 1 ? "(one key: every row is uniform, H = log 1 = 0)"
                                  : fmt::format("(dashed: a uniform row, log {} = {:.3f})", seq_len, std::log(n));
    entropy.ylabel = "H (nats)";
    focus.title = fmt::format("Focus, the mean largest weight of a row\n(dashed: a uniform row, 1/{} = {:.3f})",
                              seq_len, 1 / n);
    focus.ylabel = "largest weight";
    std::vector<double> H, F;
    for (int64_t h = 0; h < shown; ++h) {
      entropy.categories.push_back(fmt::format("head {}", h));
      H.push_back(stats[size_t(h)].mean_entropy);
      F.push_back(stats[size_t(h)].focus);
    }
    focus.categories = entropy.categories;
    entropy.groups = {{"", H}};
    focus.groups = {{"", F}};
    if (seq_len > 1) entropy.hlines = {{std::log(n), ""}};
    focus.hlines = {{1 / n, ""}};
    const std::string title =
        fmt::format("Per-head entropy and focus, {} of d_k = {}{} (untrained)", count_of(o.n_heads, "head"), d_k,
                    shown < o.n_heads ? fmt::format(", first {} shown", shown) : "");
    // Wide enough for a readable number on every bar.
    return plot::bars_row(path, title, {entropy, focus}, std::max(520, int(36 * shown) + 240));
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

}  // namespace sa::ch4
