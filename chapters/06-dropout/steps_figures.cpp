// Chapter 6's figures: the weights before and after one draw, single weights
// against whole rows and columns, the kept fraction against p, and the
// convergence of the mean over draws.
#include "06-dropout/steps.hpp"

#include "sa/plot.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sa::ch6 {

void draw_figures(Figures& figures, const Options& o, const Example& ex, const Draw& draw, const CoarseDrops& coarse,
                  const std::vector<SweepPoint>& sweep, const std::vector<Checkpoint>& curve) {
  const std::vector<std::string>& tokens = ex.tokens;
  const Matrix& weights = ex.att.weights;
  const Matrix& dropped = draw.drop.output;
  const std::vector<Matrix> patterns{dropped, coarse.row_dropped, coarse.col_dropped};
  const std::string rest = o.p < 1.0 ? fmt::format("the rest x {}", scale_text(o.p))
                                     : "the rest unscaled: at p = 1 all is dropped";
  const std::vector<std::string> pattern_names{
      fmt::format("element-wise (this draw, {} dropped)", weights.size() - draw.kept),
      // (the other two drop nothing else: every other weight survives,
      // scaled as a survivor is, so the element-wise zeros are not in them)
      fmt::format("only the query row '{}' ({})", tokens[size_t(coarse.query)], rest),
      fmt::format("only the key column '{}' ({})", tokens[size_t(coarse.key)], rest)};
  const double vmax = std::max(double(dropped.maxCoeff()), double(weights.maxCoeff()));
  auto panel = [&](const std::string& title, const Matrix& values) {
    plot::Heatmap h = plot::weights_heatmap(title, values, tokens);
    h.cblabel = "weight";
    h.vmax = vmax;  // survivors are scaled up by 1/(1-p): one scale for every panel, a darker cell is larger
    h.decimals = 3;
    return h;
  };

  figures.draw("before_after.png", [&](const std::string& path) {
    return plot::heatmap_grid(
        path, fmt::format("Attention weights before and after one dropout draw (p = {}, survivors x {})", o.p,
                          scale_text(o.p)),
        1, 2,
        {panel("before (evaluation: dropout is the identity)", weights),
         panel(fmt::format("after (training): {} of {} dropped", weights.size() - (dropped.array() != 0).count(),
                           weights.size()),
               dropped)},
        520);
  });

  figures.draw("drop_patterns.png", [&](const std::string& path) {
    std::vector<plot::Heatmap> panels;
    for (size_t k = 0; k < patterns.size(); ++k) panels.push_back(panel(pattern_names[k], patterns[k]));
    return plot::heatmap_grid(path, "What gets dropped: single weights, a whole query row, a whole key column", 1,
                              int(panels.size()), panels, 460);
  });

  figures.draw("kept_fraction.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("Kept fraction against p ({} draws of the {} x {} weights per p)", kSweepDraws,
                          weights.rows(), weights.cols());
    p.xlabel = "drop probability p";
    p.ylabel = "fraction of weights kept";
    plot::Series theory{"1 - p", {}, {}, plot::Series::Style::Lines};
    plot::Series measured{"measured", {}, {}, plot::Series::Style::Points};
    for (const SweepPoint& s : sweep) {
      theory.x.push_back(s.p);
      theory.y.push_back(1.0 - s.p);
      measured.x.push_back(s.p);
      measured.y.push_back(s.kept_fraction);
    }
    p.series = {theory, measured};
    p.ymin = -0.02;
    p.ymax = 1.02;
    return plot::lines(path, p);
  });

  if (curve.empty()) return;  // p = 0 or 1: nothing random to converge (step 4 says why)
  figures.draw("convergence.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = fmt::format("Mean of n dropped-out weight matrices against the weights (p = {})", o.p);
    p.xlabel = "number of draws n";
    p.ylabel = "error of the mean |mean_n - weights|";
    plot::Series max_err{"largest error over the 36 weights", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series rms_err{"root mean square error", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series theory{"predicted RMS: sqrt(p/(1-p) mean(w^2) / n), slope -1/2", {}, {}, plot::Series::Style::Dashed};
    for (const Checkpoint& c : curve) {
      max_err.x.push_back(double(c.n));
      max_err.y.push_back(c.max_error);
      rms_err.x.push_back(double(c.n));
      rms_err.y.push_back(c.rms_error);
      theory.x.push_back(double(c.n));
      theory.y.push_back(c.predicted_rms);
    }
    p.series = {max_err, rms_err, theory};
    p.logx = true;
    p.logy = true;
    return plot::lines(path, p);
  });
}

}  // namespace sa::ch6
