// Chapter 7, task 2's figures: each model's heads before and after
// training, bidirectional against causal, their entropy and focus, the
// sharpest causal head as a surface, the accuracy per epoch, and who
// attends to whom.
#include "07-training/analysis.hpp"
#include "07-training/corpus.hpp"
#include "07-training/model.hpp"
#include "07-training/program.hpp"
#include "07-training/task_corpus.hpp"

#include "sa/figures.hpp"
#include "sa/plot.hpp"

#include <fmt/core.h>

#include <cmath>
#include <string>
#include <vector>

namespace sa::ch7 {

void draw_corpus_figures(Figures& figures, int64_t heads, int64_t epochs, const Corpus& corpus,
                         const CorpusSplit& split, const std::vector<std::string>& labels, const std::string& quoted,
                         int64_t n, const std::vector<CorpusModel>& models) {
  const auto panel = [&](const Matrix& P, const std::string& title) {
    plot::Heatmap p = plot::weights_heatmap(title, P, labels);
    p.xlabel = "key (attended to)";
    return p;
  };
  const auto stats = [&](const Matrix& P) {
    const PatternStats st = attention_pattern(P);
    return fmt::format("entropy {:.2f}, focus {:.2f}", st.entropy, st.focus);
  };
  // In the 340-pixel panels of the 4-head grids a title on one line is
  // either set small or broken in two, depending on its length ("causal
  // head 0" against "bidirectional head 0"): broken here, every panel's
  // title has two lines at one size.
  const auto grid_title = [&](const Matrix& P, const std::string& who) { return who + "\n" + stats(P); };
  const CorpusModel &single = models[0], &bi = models[1], &causal = models[2];
  const int H = int(heads);
  figures.draw("corpus_single_head.png", [&](const std::string& path) {
    return plot::heatmap_grid(path, fmt::format("Single head, bidirectional, on {}: before and after {}", quoted,
                                                count_of(epochs, "epoch")),
                              1, 2,
                              {panel(single.untrained[0], "untrained: " + stats(single.untrained[0])),
                               panel(single.trained[0], "trained: " + stats(single.trained[0]))},
                              460);
  });
  // One model's heads before (top row) and after training (bottom row):
  // the causal model here, the bidirectional one just below.
  const auto untrained_vs_trained = [&](const std::string& file, const CorpusModel& m) {
    figures.draw(file, [&](const std::string& path) {
      std::vector<plot::Heatmap> panels;
      for (int h = 0; h < H; ++h) panels.push_back(panel(m.untrained[size_t(h)], grid_title(m.untrained[size_t(h)], fmt::format("head {} untrained", h))));
      for (int h = 0; h < H; ++h) panels.push_back(panel(m.trained[size_t(h)], grid_title(m.trained[size_t(h)], fmt::format("head {} trained", h))));
      return plot::heatmap_grid(path, fmt::format("{} heads, {}, on {}: before (top) and after {} (bottom)", H,
                                                  m.cfg.causal ? "causal" : "bidirectional", quoted,
                                                  count_of(epochs, "epoch")),
                                2, H, panels, 340);
    });
  };
  untrained_vs_trained("corpus_untrained_vs_trained.png", causal);
  untrained_vs_trained("corpus_bidirectional_untrained_vs_trained.png", bi);
  // Whether the bidirectional heads read the next word on this sentence: the
  // most any head puts on it against a uniform head's 1/n, which another
  // seed, corpus or epoch count can leave flat (the title says which).
  size_t reader = 0;
  for (size_t h = 1; h < bi.trained.size(); ++h)
    if (next_token_weight(bi.trained[h]) > next_token_weight(bi.trained[reader])) reader = h;
  const double next = next_token_weight(bi.trained[reader]), uniform = 1.0 / double(n);
  const bool reads = next >= std::min(2.0 * uniform, uniform + (1.0 - uniform) / 2.0);
  const std::string bi_claim =
      reads ? fmt::format("bidirectional (top) reads the next word (head {}: {:.2f} on it, uniform {:.2f})", reader,
                          next, uniform)
            : fmt::format("bidirectional (top) puts at most {:.2f} on the next word (uniform {:.2f})", next,
                          uniform);
  figures.draw("corpus_bidirectional_vs_causal.png", [&](const std::string& path) {
    std::vector<plot::Heatmap> panels;
    for (int h = 0; h < H; ++h) panels.push_back(panel(bi.trained[size_t(h)], grid_title(bi.trained[size_t(h)], fmt::format("bidirectional head {}", h))));
    for (int h = 0; h < H; ++h) panels.push_back(panel(causal.trained[size_t(h)], grid_title(causal.trained[size_t(h)], fmt::format("causal head {}", h))));
    return plot::heatmap_grid(path,
                              fmt::format("Trained {} from the same weights: {}; causal (bottom) cannot see it",
                                          count_of(epochs, "epoch"), bi_claim),
                              2, H, panels, 340);
  });
  const auto metric_bars = [&](const std::string& file, const std::string& what, const std::string& ylabel,
                               auto metric, double uniform_bi, double uniform_causal) {
    figures.draw(file, [&](const std::string& path) {
      plot::BarChart c;
      c.title = fmt::format("{} of each head on {}, before and after training", what, quoted);
      c.ylabel = ylabel;
      plot::BarGroup before{"untrained", {}}, after{"trained", {}};
      for (const CorpusModel& m : models)
        for (size_t h = 0; h < m.trained.size(); ++h) {
          c.categories.push_back(fmt::format("{} {}", m.tag, h));  // heads from 0, as every table counts them
          before.values.push_back(std::round(100 * metric(m.untrained[h])) / 100);
          after.values.push_back(std::round(100 * metric(m.trained[h])) / 100);
        }
      c.groups = {before, after};
      // Each line sits on its own models' untrained bars, but runs across all
      // of them: its label names whose it is (longer labels widen the strip
      // the chart keeps for them right of the last bars).
      c.hlines = {{uniform_bi, "uniform, single and bi"}, {uniform_causal, "uniform, causal"}};
      return plot::bars(path, c);
    });
  };
  metric_bars("corpus_entropy.png", "Entropy", "mean entropy of a query's weights (nats)",
              [](const Matrix& P) { return attention_pattern(P).entropy; }, mean_entropy(uniform_weights(n, false)),
              mean_entropy(uniform_weights(n, true)));
  metric_bars("corpus_focus.png", "Focus", "mean of each query's largest weight",
              [](const Matrix& P) { return attention_pattern(P).focus; }, attention_pattern(uniform_weights(n, false)).focus,
              attention_pattern(uniform_weights(n, true)).focus);
  {
    // The causal head with the sharpest pattern, as a surface.
    size_t best = 0;
    for (size_t h = 1; h < causal.trained.size(); ++h)
      if (attention_pattern(causal.trained[h]).focus > attention_pattern(causal.trained[best]).focus) best = h;
    figures.draw("corpus_surface.png", [&](const std::string& path) {
      // The queries in reverse order: the surface puts row 0 at the back,
      // and in the text's order the diagonal pointed at the reader, with the
      // tall bars beside it hiding those behind them. Reversed, the first
      // query stands at the front, the diagonal runs across the picture, and
      // the half in front of it (the keys after their query, which the mask
      // sets to 0) lies open, hidden by nothing.
      plot::Surface sf;
      sf.title = fmt::format("Trained causal head {} on {}: keys after their query (front half) get 0", best, quoted);
      sf.z = causal.trained[best].colwise().reverse();
      sf.row_labels.assign(labels.rbegin(), labels.rend());
      sf.col_labels = labels;
      sf.xlabel = "key";
      sf.ylabel = "query";
      sf.zlabel = "weight";
      return plot::surface(path, sf);
    });
  }
  figures.draw("corpus_accuracy.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Held-out next-word accuracy, the whole sentence in the input";
    p.xlabel = "epoch";
    p.ylabel = "accuracy (%)";
    p.ymin = 0;
    p.ymax = 100;
    for (const CorpusModel& m : models) {
      plot::Series se{m.name, {}, {}, plot::Series::Style::LinesPoints};
      for (size_t e = 0; e < m.epoch_held.size(); ++e) {
        se.x.push_back(double(e + 1));
        se.y.push_back(m.epoch_held[e]);
      }
      p.series.push_back(std::move(se));
    }
    p.hlines = {{ngram_accuracy(corpus, split.train, split.held_out, 2), "lookup table of the last 2 words"}};
    return plot::lines(path, p);
  });
  figures.draw("corpus_flow.png", [&](const std::string& path) {
    std::vector<plot::FlowPanel> panels;
    for (int h = 0; h < H; ++h) panels.push_back({fmt::format("bidirectional, head {}", h), bi.trained[size_t(h)], labels, labels});
    for (int h = 0; h < H; ++h) panels.push_back({fmt::format("causal, head {}", h), causal.trained[size_t(h)], labels, labels});
    return plot::flow(path,
                      fmt::format("Who attends to whom in {} after training (line width and darkness: the weight; "
                                  "below 0.05 not drawn)",
                                  quoted),
                      2, H, panels, 0.05, 300);
  });
}

}  // namespace sa::ch7
