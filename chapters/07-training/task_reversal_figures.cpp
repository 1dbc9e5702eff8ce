// Chapter 7, task 1's figures: attention before and after training, the
// loss and accuracy curves, where each head looks, the heads switched off
// one at a time, and the position encodings compared.
#include "07-training/analysis.hpp"
#include "07-training/model.hpp"
#include "07-training/program.hpp"
#include "07-training/reversal.hpp"
#include "07-training/task_reversal.hpp"

#include "sa/figures.hpp"
#include "sa/plot.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch7 {

void draw_reversal_figures(Figures& figures, const ReversalOptions& o, const TinyTransformer& model,
                           const ReversalData& test, int64_t T, int64_t D,
                           const std::vector<plot::Heatmap>& untrained_panels, const std::vector<EpochRecord>& history,
                           const std::vector<HeadScore>& heads) {
  std::vector<std::string> labels;
  for (int64_t p = 0; p < T; ++p) labels.push_back(token_label(test.sample(o.sample)[size_t(p)]));
  figures.draw("attention_untrained.png", [&](const std::string& path) {
    return plot::heatmap_grid(path, fmt::format("Attention before training, held-out sample {} (rows: layers)", o.sample),
                              int(o.layers), int(o.heads), untrained_panels, 360);
  });
  figures.draw("attention_trained.png", [&](const std::string& path) {
    return plot::heatmap_grid(path,
                              fmt::format("Attention after {}, held-out sample {} (rows: layers)",
                                          count_of(o.epochs, "epoch"), o.sample),
                              int(o.layers), int(o.heads), heatmap_panels(model, o.sample, labels), 360);
  });
  figures.draw("loss.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Training loss (mean cross-entropy over the reversed half)";
    p.xlabel = "epoch";
    p.ylabel = "loss (log scale)";
    p.logy = true;
    plot::Series tr{"train (mean over the epoch's steps)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series he{"held-out (after the epoch)", {}, {}, plot::Series::Style::LinesPoints};
    for (size_t e = 0; e < history.size(); ++e) {
      tr.x.push_back(double(e + 1));
      tr.y.push_back(history[e].loss);
      he.x.push_back(double(e + 1));
      he.y.push_back(history[e].test_loss);
    }
    p.series = {tr, he};
    return plot::lines(path, p);
  });
  figures.draw("accuracy.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Token accuracy on the reversed half";
    // A log axis spreads the first epochs, where the climb is; over fewer
    // than ten it only bunches the ticks. The label says where the held-out
    // accuracy passed 90% in this run, if it did.
    p.logx = history.size() >= 10;
    const auto passed = std::find_if(history.begin(), history.end(), [](const auto& h) { return h.test_acc >= 90.0; });
    p.xlabel = !p.logx                   ? "epoch"
               : passed == history.end() ? "epoch (log scale)"
                                         : fmt::format("epoch (log scale: held-out accuracy passes 90% at epoch {})",
                                                       passed - history.begin() + 1);
    p.ylabel = "accuracy (%)";
    p.ymin = 0;
    p.ymax = 101;
    plot::Series tr{"train (before each update)", {}, {}, plot::Series::Style::LinesPoints};
    plot::Series he{"held-out (after the epoch)", {}, {}, plot::Series::Style::LinesPoints};
    for (size_t e = 0; e < history.size(); ++e) {
      tr.x.push_back(double(e + 1));
      tr.y.push_back(history[e].train_acc);
      he.x.push_back(double(e + 1));
      he.y.push_back(history[e].test_acc);
    }
    p.series = {tr, he};
    // A reference line across the plot: a series from the first epoch to
    // the last was a line of no length after one epoch (--epochs 1).
    p.hlines = {{99.0, "99%"}};
    return plot::lines(path, p);
  });
  figures.draw("heads.png", [&](const std::string& path) {
    plot::BarChart c;
    c.title = "Where each head puts its largest weight, queries after SEP";
    c.ylabel = "fraction of queries (%)";
    plot::BarGroup mirror{fmt::format("mirror position {} - p", 2 * D), {}},
        source{fmt::format("source position {} - p", 2 * D - 1), {}};
    for (const HeadScore& s : heads) {
      c.categories.push_back(fmt::format("L{} H{}", s.layer, s.head));
      mirror.values.push_back(std::round(1000 * s.mirror) / 10);  // one decimal on the bar labels
      source.values.push_back(std::round(1000 * s.source) / 10);
    }
    c.groups = {mirror, source};
    return plot::bars(path, c);
  });

}

void draw_ablation_and_position_figures(Figures& figures, int64_t vocab, const Score& trained,
                                        const std::vector<Ablation>& ablations,
                                        const std::vector<PositionRun>& position_runs) {
  figures.draw("head_ablation.png", [&](const std::string& path) {
    plot::BarChart c;
    c.title = "Held-out token accuracy with one head switched off";
    c.ylabel = "held-out token accuracy (%)";
    plot::BarGroup without{"without this head", {}};
    for (const Ablation& a : ablations) {
      c.categories.push_back(fmt::format("L{} H{}", a.layer, a.head));
      without.values.push_back(std::round(100 * a.accuracy) / 100);
    }
    c.groups = {without};
    c.hlines = {{trained.percent(), "every head"}, {100.0 / double(vocab - 2), "chance"}};
    return plot::bars(path, c);
  });
  figures.draw("positional_encodings.png", [&](const std::string& path) {
    plot::LinePlot p;
    p.title = "Held-out token accuracy by position encoding (same seed, data and batch order)";
    p.xlabel = "epoch";
    p.ylabel = "held-out token accuracy (%)";
    p.ymin = 0;
    p.ymax = 101;
    for (const PositionRun& r : position_runs) {
      plot::Series s{position_name(r.position), {}, r.test_acc, plot::Series::Style::LinesPoints};
      for (size_t e = 0; e < r.test_acc.size(); ++e) s.x.push_back(double(e + 1));
      p.series.push_back(std::move(s));
    }
    // A reference line across whatever epochs ran (a series from epoch 1 to
    // 2 drew an axis to epoch 2 after a single epoch).
    p.hlines = {{100.0 / double(vocab - 2), "chance"}};
    return plot::lines(path, p);
  });
}

}  // namespace sa::ch7
