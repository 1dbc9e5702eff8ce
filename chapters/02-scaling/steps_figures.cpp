// Chapter 2's figures, drawn after the last step: the running example's
// scores against their angles, the variance against d_k, the histograms of
// raw and scaled scores, the softmax preview's largest weights, and the
// scaled scores of the running example.
#include "02-scaling/steps.hpp"

#include "sa/plot.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sa::ch2 {

namespace {

std::vector<double> to_doubles(const Matrix& m) {
  std::vector<double> v(size_t(m.size()));
  for (int64_t i = 0; i < m.size(); ++i) v[size_t(i)] = m.data()[i];
  return v;
}

}  // namespace

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& scaled,
                  const Measured& m, const Matrix& hist_raw, const Matrix& hist_scaled, int64_t hist_d_k,
                  const Geometry& geometry) {
  figures.draw("dot_product_geometry.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Every score of the running example against the cosine of its angle: q . k = |q| |k| cos(theta)";
    p.xlabel = "cos(theta) between query i and key j";
    p.ylabel = "raw score q_i . k_j";
    plot::Series pairs{"pairs (query, key)", geometry.cosines, geometry.scores, plot::Series::Style::Points};
    // The two lines |q| |k| cos over the cosines that occur: every pair lies
    // on the line of its own length product, between these two. A cosine
    // lies in [-1, 1], and so do the lines (one token's only pair has cos 1).
    const auto [lo, hi] = std::minmax_element(geometry.cosines.begin(), geometry.cosines.end());
    const double a = std::max(*lo - 0.05, -1.0), b = std::min(*hi + 0.05, 1.0);
    auto line = [&](double lengths, const char* which) {
      return plot::Series{fmt::format("|q| |k| = {:.2f} ({})", lengths, which), {a, b},
                          {a * lengths, b * lengths}, plot::Series::Style::Dashed};
    };
    // One pair (a text of one token), or products equal to two decimals:
    // the two lines are one, named once.
    if (fmt::format("{:.2f}", geometry.min_lengths) == fmt::format("{:.2f}", geometry.max_lengths)) {
      p.series = {pairs, line(geometry.max_lengths, geometry.cosines.size() == 1 ? "the only pair" : "every pair")};
    } else {
      p.series = {pairs, line(geometry.min_lengths, "smallest pair"), line(geometry.max_lengths, "largest pair")};
    }
    return plot::lines(path, p);
  });

  figures.draw("variance_vs_d_k.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("Variance of q . k for q, k ~ N(0, 1)^d_k ({} samples per point)", o.samples);
    p.xlabel = "d_k";
    p.ylabel = "variance (log scale)";
    p.logx = p.logy = true;
    plot::Series raw{"measured Var(q . k)", m.d_k, {}, plot::Series::Style::Points};
    plot::Series raw_theory{"theory: d_k", m.d_k, m.d_k, plot::Series::Style::Lines};
    plot::Series scaled_pts{"measured Var(q . k / sqrt(d_k))", m.d_k, {}, plot::Series::Style::Points};
    plot::Series scaled_theory{"theory: 1", m.d_k, std::vector<double>(m.d_k.size(), 1.0),
                               plot::Series::Style::Dashed};
    for (const DotStats& s : m.stats) {
      raw.y.push_back(s.variance);
      scaled_pts.y.push_back(s.scaled_variance);
    }
    p.series = {raw_theory, raw, scaled_theory, scaled_pts};
    // Room for both theory lines, and for every measured point: with few
    // --samples a variance can be far from its theory, and a fixed 0.5 to
    // 2 d_k hid them (--samples 2 measured 8.9 at d_k 4, 0.0039 at d_k 64).
    double lowest = 0.5, highest = 2.0 * m.d_k.back();
    for (const plot::Series* se : {&raw, &scaled_pts})
      for (double v : se->y) lowest = std::min(lowest, v / 2), highest = std::max(highest, 2 * v);
    p.ymin = lowest;
    p.ymax = highest;
    return plot::lines(path, p);
  });

  figures.draw(fmt::format("score_histograms_d_k_{}.png", hist_d_k), [&](const std::string& path) {
    const Spread r = spread(hist_raw), s = spread(hist_scaled);
    plot::Histogram h;
    h.title = fmt::format("{} scores of random q, k at d_k = {}: raw std {:.1f}, scaled std {:.2f}", hist_raw.size(),
                          hist_d_k, r.std, s.std);
    h.xlabel = "score";
    h.series = {{"raw: q . k", to_doubles(hist_raw), {}},
                {fmt::format("scaled: q . k / sqrt({})", hist_d_k), to_doubles(hist_scaled), {}}};
    h.bins = 60;
    // Two panels, each with its own bins: shared bins would make the scaled
    // histogram, 22.6 times narrower, a single spike.
    h.own_axes = true;
    return plot::histogram(path, h);
  });

  figures.draw("largest_weight_vs_d_k.png", [&](const std::string& path) {
    // Bars rather than lines: one pair per d_k reads at a glance, and the
    // value on each bar is the number the table prints.
    plot::BarChart c;
    c.title = fmt::format("Largest softmax weight in a row of {} random scores (mean of {} rows)", o.keys,
                          kSoftmaxRows);
    c.ylabel = fmt::format("largest weight (uniform row: 1/{} = {:.3f})", o.keys, 1.0 / double(o.keys));
    for (double d_k : m.d_k) c.categories.push_back(fmt::format("d_k={}", d_k));
    c.groups = {{"without scaling: softmax(q . k)", m.raw_largest},
                {"with scaling: softmax(q . k / sqrt(d_k))", m.scaled_largest}};
    return plot::bars(path, c);
  });

  figures.draw("scaled_scores.png", [&](const std::string& path) {
    plot::Heatmap h;
    h.title = fmt::format("Scaled scores Q K^T / sqrt({}) of the running example", o.d_k);
    h.values = scaled;
    h.row_labels = tokens;
    h.col_labels = tokens;
    h.cblabel = "q . k / sqrt(d_k)";
    h.diverging = true;
    h.decimals = 2;
    return plot::heatmap(path, h);
  });
}

}  // namespace sa::ch2
