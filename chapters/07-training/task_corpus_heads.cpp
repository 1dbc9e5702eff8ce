// Chapter 7, task 2, steps "What training did to each head" (entropy,
// focus, the tallest bar and the strongest links of every head, before and
// after training) and "The pattern analyzer over every head".
#include "07-training/analysis.hpp"
#include "07-training/model.hpp"
#include "07-training/patterns.hpp"
#include "07-training/program.hpp"
#include "07-training/task_corpus.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sa::ch7 {

double mean_entropy(const Matrix& P) { return attention_pattern(P).entropy; }

namespace {

std::string percent_change(double before, double after) {
  if (before == 0) return "   n/a";
  return fmt::format("{:+6.1f}%", 100.0 * (after - before) / before);
}

// The tallest block of a head's surface: its largest weight, leaving out,
// when `causal`, the first query's 1, which the mask forces.
double tallest_bar(const Matrix& P, bool causal) {
  const std::vector<Link> top = strongest_links(P, 1, causal);
  return top.empty() ? 0.0 : double(top[0].weight);
}

// Step "What training did to each head", part 1: entropy, focus and the
// tallest bar of every head, before and after training.
void print_entropy_focus_table(const std::vector<CorpusModel>& models, int64_t n) {
  say("Entropy (mean over the queries of -sum_j a_j ln a_j, nats) and focus (mean of each query's largest "
      "weight), before and after training, and the tallest bar of the head's "
      "surface (its largest weight, leaving out a causal head's first query, whose 1 the mask forces):");
  fmt::print("  {:<26} {:>4}   {:^26}   {:^26}   {:>15}\n", "", "", "entropy (nats)", "focus", "tallest bar");
  fmt::print("  {:<26} {:>4}   {:>8} {:>8} {:>8}   {:>8} {:>8} {:>8}   {:>8} {:>8}\n", "model", "head", "before",
             "after", "change", "before", "after", "change", "before", "after");
  for (const CorpusModel& m : models)
    for (size_t h = 0; h < m.trained.size(); ++h) {
      const PatternStats a = attention_pattern(m.untrained[h]), b = attention_pattern(m.trained[h]);
      fmt::print("  {:<26} {:>4}   {:8.3f} {:8.3f} {:>8}   {:8.3f} {:8.3f} {:>8}   {:8.3f} {:8.3f}\n",
                 h == 0 ? m.name : "", h, a.entropy, b.entropy, percent_change(a.entropy, b.entropy), a.focus, b.focus,
                 percent_change(a.focus, b.focus), tallest_bar(m.untrained[h], m.cfg.causal),
                 tallest_bar(m.trained[h], m.cfg.causal));
    }
  fmt::print("  uniform weights over {} tokens: entropy {:.3f} bidirectional, {:.3f} causal; focus {:.3f} "
             "bidirectional, {:.3f} causal; tallest bar {:.3f} bidirectional, {:.3f} causal\n",
             n, mean_entropy(uniform_weights(n, false)), mean_entropy(uniform_weights(n, true)),
             attention_pattern(uniform_weights(n, false)).focus, attention_pattern(uniform_weights(n, true)).focus,
             tallest_bar(uniform_weights(n, false), false), tallest_bar(uniform_weights(n, true), true));
}

// Step "What training did to each head", part 2: each head's strongest links.
void print_strongest_links(const std::vector<CorpusModel>& models, const std::vector<std::string>& labels) {
  say("The strongest learned links of each head (query -> key, weight; for the causal model the first query, "
      "which can only see itself, is left out):");
  for (const CorpusModel& m : models)
    for (size_t h = 0; h < m.trained.size(); ++h) {
      std::vector<std::string> shown;
      for (const Link& l : strongest_links(m.trained[h], 3, m.cfg.causal))
        shown.push_back(fmt::format("'{}' -> '{}' {:.2f} ({})", labels[size_t(l.query)], labels[size_t(l.key)],
                                    l.weight, link_direction(l)));
      fmt::print("  {:<8} head {}  {}\n", m.tag, h, fmt::join(shown, ",  "));
    }
}

// Step "What training did to each head", part 3: what the table says.
void say_how_far_from_uniform(const std::vector<CorpusModel>& models, int64_t n) {
  // What the table says, counted from it: how far each head moved from a
  // uniform head's entropy, and how many bidirectional links point at the
  // next token (the answer they can read).
  double least = 1.0, most = 0.0;
  int ahead = 0, links = 0;
  for (const CorpusModel& m : models) {
    const double uniform = attention_pattern(uniform_weights(n, m.cfg.causal)).entropy;
    for (const Matrix& P : m.trained) {
      const double drop = uniform > 0 ? 1.0 - attention_pattern(P).entropy / uniform : 0.0;
      least = std::min(least, drop), most = std::max(most, drop);
      if (m.cfg.causal) continue;
      for (const Link& l : strongest_links(P, 3, false)) ++links, ahead += l.key == l.query + 1;
    }
  }
  // (As printed: a range whose ends round alike is one number, and 0% is no drop.)
  const long lo = std::lround(100 * least), hi = std::lround(100 * most);
  const std::string drop = hi == 0     ? "less than 1% below a uniform head's"
                           : lo == hi  ? fmt::format("{}% below a uniform head's", lo)
                                       : fmt::format("{}% to {}% below a uniform head's", lo, hi);
  say(fmt::format("Trained, the heads' entropy is {} on this sentence. "
                  "{} of the {} strongest bidirectional links point one token ahead, at the word to predict; "
                  "the causal links can only look back, at the words that decide what comes next.",
                  drop, ahead, links));
}

// Step "What training did to each head", part 4: what the multi-head
// models' figures show, counted from the weights they draw: how far the
// untrained heads are from uniform, how many trained heads stand taller
// than any untrained head of their model (a causal head's second query
// alone gets 1/2 from a uniform head, so each model is measured against its
// own), and how many sharpened.
struct FigureHeights {
  double off_uniform = 0, trained_low = 1, trained_high = 0;
  double untrained_top[2] = {0, 0};  // bidirectional, causal
  int taller = 0, sharper = 0, heads = 0;
};

FigureHeights measure_figure_heights(const std::vector<CorpusModel>& models, int64_t n) {
  FigureHeights f;
  for (const CorpusModel* m : {&models[1], &models[2]}) {
    const Matrix uniform = uniform_weights(n, m->cfg.causal);
    double& top_before = f.untrained_top[m->cfg.causal ? 1 : 0];
    for (const Matrix& P : m->untrained) {
      f.off_uniform = std::max(f.off_uniform, double((P - uniform).cwiseAbs().maxCoeff()));
      top_before = std::max(top_before, tallest_bar(P, m->cfg.causal));
    }
    for (size_t h = 0; h < m->trained.size(); ++h) {
      ++f.heads;
      const double top = tallest_bar(m->trained[h], m->cfg.causal);
      f.trained_low = std::min(f.trained_low, top), f.trained_high = std::max(f.trained_high, top);
      // Counted as printed: a bar "stands above" when the sentence's two
      // decimals show it taller, and a focus "rose" when the table shows it
      // rising, in its focus columns (three decimals) or its change column (a
      // percentage to one decimal). A head that barely trained moves by
      // less, and a bare > read "every head's tallest bar (0.50) stands
      // above ... (0.50)".
      f.taller += std::round(100 * top) > std::round(100 * top_before);
      const double before = attention_pattern(m->untrained[h]).focus, after = attention_pattern(m->trained[h]).focus;
      f.sharper += std::round(1000 * after) > std::round(1000 * before) ||
                   (before > 0 && std::round(1000 * (after - before) / before) > 0);
    }
  }
  return f;
}

// The trained heads' sentence of part 4: their tallest bars against the
// untrained ones, and how many sharpened.
std::string trained_heights_text(const FigureHeights& f) {
  const std::string before = fmt::format("the tallest bar of any untrained head of its model (bidirectional "
                                         "{:.2f}, causal {:.2f})",
                                         f.untrained_top[0], f.untrained_top[1]);
  // Two bars that print alike are one number, not a range.
  const std::string trained_range = fmt::format("{:.2f}", f.trained_low) == fmt::format("{:.2f}", f.trained_high)
                                        ? fmt::format("{:.2f}", f.trained_high)
                                        : fmt::format("{:.2f} to {:.2f}", f.trained_low, f.trained_high);
  const std::string bars = trained_range.find(" to ") == std::string::npos
                               ? fmt::format("are all {}", trained_range)
                               : fmt::format("run from {}", trained_range);
  std::string text =
      f.taller == f.heads ? fmt::format("Trained, every head's tallest bar ({}) stands above {}. ", trained_range,
                                        before)
      : f.taller == 0     ? fmt::format("Trained, the heads' tallest bars {}, and none stands above {}. ", bars,
                                        before)
                          : fmt::format("Trained, the heads' tallest bars {}, and {} of the {} {} above {}. ", bars,
                                        f.taller, f.heads, f.taller == 1 ? "stands" : "stand", before);
  text += f.sharper == f.heads ? fmt::format("The focus of all {} heads rose.", f.heads)
          : f.sharper == 0     ? fmt::format("The focus of none of the {} heads rose.", f.heads)
                               : fmt::format("The focus of {} of the {} heads rose.", f.sharper, f.heads);
  return text;
}

void say_what_the_figures_show(int64_t heads, const std::vector<CorpusModel>& models, int64_t n) {
  const FigureHeights f = measure_figure_heights(models, n);
  const int64_t H = heads;
  std::string text = fmt::format("The figures of the two {}-head models are these rows as pictures: the "
                                 "heatmaps before and after training on one colour scale, 0 to 1 "
                                 "(corpus_untrained_vs_trained.png causal, "
                                 "corpus_bidirectional_untrained_vs_trained.png bidirectional). ",
                                 H);
  // "Flat" only while no weight strays a quarter of 1/n from uniform.
  text += f.off_uniform < 0.25 / double(n)
              ? fmt::format("Untrained, no weight is more than {:.3f} from the uniform head's: flat at 1/{} "
                            "without the mask, a staircase with it (1/(i + 1) in row i, so the first query's "
                            "forced 1 stands tallest). ",
                            f.off_uniform, n)
              : fmt::format("Untrained, the weights are already up to {:.2f} away from the uniform head's. ",
                            f.off_uniform);
  say(text + trained_heights_text(f));
}

}  // namespace

// Step "What training did to each head", on --text.
void step_what_training_did(int64_t heads, const std::vector<CorpusModel>& models,
                            const std::vector<std::string>& labels, int64_t n) {
  print_entropy_focus_table(models, n);
  print_strongest_links(models, labels);
  say_how_far_from_uniform(models, n);
  say_what_the_figures_show(heads, models, n);
}

namespace {

// Step "The pattern analyzer over every head", part 2: what the class
// 'locally focused' tells on a sentence this short.
void say_what_local_focus_tells(const std::vector<CorpusModel>& models, int64_t n) {
  const bool uniform_local = classify_pattern(attention_pattern(uniform_weights(n, false))) ==
                             PatternClass::LocallyFocused;
  int local = 0, rows = 0;
  for (const CorpusModel& m : models)
    for (size_t h = 0; h < m.trained.size(); ++h)
      for (const Matrix* P : {&m.untrained[h], &m.trained[h]}) {
        ++rows;
        local += classify_pattern(attention_pattern(*P)) == PatternClass::LocallyFocused;
      }
  // Does a window of 1 do better? Only if the uniform head is not locally
  // focused with it (on 2 tokens the band |j - i| <= 1 holds every key).
  const bool uniform_local_1 = classify_pattern(attention_pattern(uniform_weights(n, false), 1)) ==
                               PatternClass::LocallyFocused;
  std::string text =
      uniform_local
          ? fmt::format("With a window of 3, {} of the {} head rows are 'locally focused', and so is the uniform "
                        "head that learned nothing: on a sentence of {} tokens the band |j - i| <= 3 holds most "
                        "of the keys of every query, so local focus is near 1 whatever a head does, and that "
                        "class says little here. {}",
                        local, rows, n,
                        uniform_local_1 ? "A window of 1 does no better on so few tokens: with it too the uniform "
                                          "head is 'locally focused'."
                                        : "A window of 1 separates the heads better: with it the uniform head is "
                                          "not 'locally focused'.")
          : fmt::format("With a window of 3, {} of the {} head rows are 'locally focused'; the uniform head is "
                        "not, so on {} tokens the class does tell heads apart.",
                        local, rows, n);
  if (n <= 7)
    text += " No head can be 'distributed' here: an entropy above 2 needs more than e^2 = 7.4 keys.";
  text += " The thresholds are absolute; read the numbers against the uniform rows.";
  say(text);
}

}  // namespace

// Step "The pattern analyzer over every head".
void step_pattern_analyzer(const std::vector<CorpusModel>& models, int64_t n) {
  say("Four numbers per head on the same sentence, and a class from fixed thresholds, tested in this "
      "order: self-focused if diagonal > 0.7; locally focused if local > 0.8 (local: the weight within 3 "
      "positions of the query); concentrated if focus > 0.5 and entropy < 1.0; distributed if entropy > 2.0; "
      "mixed otherwise. The last two columns repeat local and the class with a window of 1. The uniform rows "
      "are what a head that learned nothing scores on this input:");
  fmt::print("  {:<18} {:<9}  {:>7} {:>6} {:>8} {:>8}  {:<15}  {:>8}  {}\n", "head", "", "entropy", "focus",
             "diagonal", "local 3", "class", "local 1", "class (window 1)");
  print_analyzer_row("uniform, bidir.", "", uniform_weights(n, false));
  print_analyzer_row("uniform, causal", "", uniform_weights(n, true));
  for (const CorpusModel& m : models)
    for (size_t h = 0; h < m.trained.size(); ++h) {
      print_analyzer_row(fmt::format("{} head {}", m.tag, h), "untrained", m.untrained[h]);
      print_analyzer_row("", "trained", m.trained[h]);
    }
  say_what_local_focus_tells(models, n);
}

}  // namespace sa::ch7
