// Chapter 3's figures, drawn after the last step: one row's softmax at
// several temperatures, the Jacobian's norm against d_k, the running
// example's attention weights, and the entropy of each query's weights.
#include "03-softmax/steps.hpp"

#include "03-softmax/softmax.hpp"
#include "sa/plot.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch3 {

void draw_figures(Figures& figures, const Options& o, const std::vector<std::string>& tokens, const Matrix& weights,
                  const std::vector<double>& entropy, const std::vector<double>& temperatures,
                  const std::vector<NormRow>& norms) {
  const int64_t seq_len = int64_t(tokens.size());
  figures.draw("temperature.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("softmax(x / T) of one row x = [{}] at several temperatures", fmt::join(kTemperatureRow, ", "));
    p.xlabel = "key j (logit x_j falls from 2 to -2)";
    p.ylabel = "weight";
    const Matrix x = row_matrix(kTemperatureRow);
    for (double T : temperatures) {
      const Matrix w = softmax_rows(x / float(T));
      plot::Series s;
      const bool chosen = T == o.temperature;
      s.name = fmt::format("T = {:g}{}", T, chosen ? " (--temperature)" : "");
      s.style = chosen ? plot::Series::Style::LinesPoints : plot::Series::Style::Dashed;
      for (int64_t j = 0; j < w.cols(); ++j) {
        s.x.push_back(double(j));
        s.y.push_back(w(0, j));
      }
      p.series.push_back(s);
    }
    p.ymin = 0;
    p.ymax = 1;
    return plot::lines(path, p);
  });

  figures.draw("jacobian_norm.png", [&](const std::string& path) {
    plot::LinePlot p;
    // (how many rows each point averages: with --samples 1 a point is one
    // draw, and the curve zig-zags)
    p.title = o.samples == 1
                  ? fmt::format("Frobenius norm of the softmax Jacobian, one row of {} scores q.k per point", kKeys)
                  : fmt::format("Mean Frobenius norm of the softmax Jacobian over {} rows of {} scores q.k per point",
                                o.samples, kKeys);
    p.xlabel = "d_k";
    p.ylabel = o.samples == 1 ? "||diag(p) - p p^T||_F" : "mean ||diag(p) - p p^T||_F";
    plot::Series raw{"unscaled: softmax(q.k)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series scaled{"scaled: softmax(q.k / sqrt(d_k))", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series uniform{fmt::format("uniform row: sqrt({0}-1)/{0}", kKeys), {}, {}, plot::Series::Style::Dashed};
    for (const NormRow& r : norms) {
      raw.x.push_back(double(r.d_k));
      raw.y.push_back(r.raw_norm);
      scaled.x.push_back(double(r.d_k));
      scaled.y.push_back(r.scaled_norm);
      uniform.x.push_back(double(r.d_k));
      uniform.y.push_back(std::sqrt(double(kKeys - 1)) / double(kKeys));
    }
    p.series = {scaled, raw, uniform};
    p.logx = true;
    p.ymin = 0;
    return plot::lines(path, p);
  });

  figures.draw("attention_weights.png", [&](const std::string& path) {
    plot::Heatmap h = plot::weights_heatmap(
        fmt::format("Attention weights softmax(Q K^T / sqrt({})): every row sums to 1", o.d_k), weights, tokens);
    h.vmax.reset();  // one panel, untrained weights far below 1: the data's own range shows them
    h.cblabel = "weight";
    h.decimals = 3;
    return plot::heatmap(path, h);
  });

  figures.draw("entropy.png", [&](const std::string& path) {
    plot::BarChart c;
    const double bound = std::log(double(seq_len));
    // Untrained weights are close to uniform, so the bars are close to the
    // maximum and to each other: the title says so in numbers, rather than
    // letting six near-equal bars look like a plotting fault.
    const double lowest = *std::min_element(entropy.begin(), entropy.end());
    c.title = seq_len == 1 ? std::string("Entropy of the one query's weights: one key, weight 1, so H = 0 = log 1, "
                                         "the maximum")
                           : fmt::format("Entropy of each query's weights: all within {:.0f}% of the maximum log {} = "
                                         "{:.3f} (dashed), the entropy of uniform weights",
                                         std::ceil(100.0 * (1.0 - lowest / bound)), seq_len, bound);
    c.ylabel = "H = -sum_j a_j log a_j  (nats)";
    for (int64_t i = 0; i < seq_len; ++i) c.categories.push_back(fmt::format("{} ({})", tokens[size_t(i)], i));
    c.groups.push_back({"H of the row", entropy});
    // The bound is one number for every row: a reference line, not bars. Its
    // name is in the title: a label at the line's end would take a slot as
    // wide as a bar on the right. For one token the bound, log 1 = 0, would
    // lie on the axis, unseen: the title says it in words instead.
    if (seq_len > 1) c.hlines.push_back({bound, ""});
    return plot::bars(path, c);
  });
}

}  // namespace sa::ch3
