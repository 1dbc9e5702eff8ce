// Chapter 7, task 1, steps "The trained model on unseen sequences" (the
// reversal generated one token at a time) and "What each head learned"
// (where each head puts its largest weight, the copying head, the pattern
// analyzer's numbers, and each head switched off in turn).
#include "07-training/analysis.hpp"
#include "07-training/model.hpp"
#include "07-training/patterns.hpp"
#include "07-training/program.hpp"
#include "07-training/reversal.hpp"
#include "07-training/task_reversal.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sa::ch7 {

// Step "The trained model on unseen sequences": greedy generation, one token
// at a time: SEP and everything after it come from the model itself.
void show_generation(TinyTransformer& model, const ReversalData& test, int64_t test_count, int64_t sample, int64_t D) {
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < test_count; ++i) {
    const auto s = test.sample(i);
    prompt.insert(prompt.end(), s.begin(), s.begin() + D + 1);
  }
  std::vector<int64_t> seqs = prompt;
  for (int64_t k = 0; k < D; ++k) {
    const int64_t len = D + 1 + k;
    const Matrix& logits = model.forward(seqs, test_count);
    std::vector<int64_t> next;
    for (int64_t i = 0; i < test_count; ++i) {
      Eigen::Index best = 0;
      logits.row(i * len + len - 1).maxCoeff(&best);
      next.push_back(int64_t(best));
    }
    std::vector<int64_t> grown;
    for (int64_t i = 0; i < test_count; ++i) {
      grown.insert(grown.end(), seqs.begin() + i * len, seqs.begin() + (i + 1) * len);
      grown.push_back(next[size_t(i)]);
    }
    seqs = std::move(grown);
  }
  int64_t exact = 0;
  const int64_t full = D * 2 + 1;
  for (int64_t i = 0; i < test_count; ++i) {
    const auto s = test.sample(i);
    exact += std::equal(s.begin(), s.end(), seqs.begin() + i * full);
  }
  for (int64_t i = sample; i < std::min(test_count, sample + 3); ++i) {
    const auto s = test.sample(i);
    const std::span<const int64_t> mine(seqs.data() + i * full, size_t(full));
    fmt::print("  held-out {:3}: {}  ->  {}   {}\n", i, join_tokens(s.first(size_t(D + 1))),
               join_tokens(mine.subspan(size_t(D + 1))),
               std::equal(s.begin(), s.end(), mine.begin()) ? "right" : "WRONG");
  }
  fmt::print("  {} of {} held-out sequences reversed exactly ({:.1f}%), generating one token at a time\n", exact,
             test_count, 100.0 * double(exact) / double(test_count));
}

namespace {

std::vector<Ablation> ablate_heads(TinyTransformer& model, const ReversalData& test, const ReversalTask& task,
                                   const Score& trained) {
  const ModelConfig& cfg = model.config();
  say(fmt::format("Switch one head off at a time (its d_k output columns no longer reach W_o: the rows of W_o that "
                  "read them are zeroed) and measure the held-out token accuracy again, {:.2f}% with every head:",
                  trained.percent()));
  std::vector<int64_t> ids, targets;
  std::vector<Ablation> out;
  for (int64_t l = 0; l < cfg.n_layers; ++l)
    for (int64_t h = 0; h < cfg.n_heads; ++h) {
      const double acc = evaluate_without_head(model, l, h, test, task, ids, targets).percent();
      out.push_back({l, h, acc});
      fmt::print("  without layer {}, head {}:  {:6.2f}%   ({:+6.2f} points)  {}\n", l, h, acc,
                 acc - trained.percent(), text_bar(acc / 100.0, 20));
    }
  const auto worst = std::min_element(out.begin(), out.end(),
                                      [](const Ablation& a, const Ablation& b) { return a.accuracy < b.accuracy; });
  evaluate(model, test, task, ids, targets);  // leave the full model's forward for the figures, as before
  int64_t harmless = 0;
  for (const Ablation& a : out) harmless += trained.percent() - a.accuracy < 1.0;
  // A model no better than guessing has nothing for a head to carry: that
  // no head costs a point then says nothing about the others covering.
  const double chance = 100.0 / double(task.vocab - 2);
  const bool learned = trained.percent() > chance + 1.0;
  // (A model of one head has no "most" and no others.)
  const std::string losses =
      out.size() == 1
          ? fmt::format("Losing the model's only head (layer {}, head {}) costs {:.2f} points", worst->layer,
                        worst->head, trained.percent() - worst->accuracy)
          : fmt::format("Losing layer {}, head {} costs the most ({:.2f} points); {} of the {} heads can go for "
                        "less than a point",
                        worst->layer, worst->head, trained.percent() - worst->accuracy, harmless, out.size());
  say(fmt::format("{}{}. Attention weights show where a head looks; ablation shows whether the model needs "
                  "what it finds there.",
                  losses,
                  // (--vocab 3 leaves one digit value: writing it everywhere is chance, 100%.)
                  !learned && task.vocab == 3
                      ? fmt::format(", but with one digit value to write the task needs no head: writing it "
                                    "everywhere scores 100%, and the model is at {:.2f}%",
                                    trained.percent())
                  : !learned ? fmt::format(", but with every head the model is at {:.2f}%, no better than chance "
                                           "({:.2f}%): it has learned nothing yet that a head could carry",
                                           trained.percent(), chance)
                  : harmless == int64_t(out.size()) && out.size() > 1
                      ? ": no head is needed alone, the others cover for any one of them"
                      : ""));
  return out;
}

// Step "What each head learned", part 1: for every head, how often its
// largest weight falls on the mirror position and on the source position.
void print_head_scores(const std::vector<HeadScore>& heads, int64_t D, int64_t test_count) {
  say(fmt::format("For every query p after SEP, where does the head put its largest weight? On the mirror "
                  "position {} - p (the input token equal to the query's own, the check that first comes to mind), or on the "
                  "source position {} - p (the token the query has to write next)? Over {}:",
                  2 * D, 2 * D - 1,
                  test_count == 1 ? std::string("the one held-out sample")
                                  : fmt::format("all {} held-out samples", test_count)));
  fmt::print("  {:<16} {:>8}  {:<20}  {:>8}  {:<20}\n", "", "mirror", "", "source", "");
  for (const HeadScore& s : heads)
    fmt::print("  layer {}, head {}  {:7.1f}%  {}  {:7.1f}%  {}\n", s.layer, s.head, 100 * s.mirror,
               text_bar(s.mirror, 20), 100 * s.source, text_bar(s.source, 20));
}

// Step "What each head learned", part 2: the head that finds the source
// most often, named and shown on the sample.
void show_copying_head(int64_t sample, const std::vector<HeadScore>& heads, const TinyTransformer& model,
                       const ReversalData& test, int64_t T) {
  const HeadScore* best = &heads.front();
  for (const HeadScore& s : heads)
    if (s.source > best->source) best = &s;
  // A head that finds the source most of the time has learned to copy;
  // after too few epochs none has, and the heatmap shows no anti-diagonal.
  // Largest is not enough: a head that splits its weight nearly evenly
  // has a largest weight somewhere too. Copying puts most of it there
  // (0.6: clearly more than the 0.5 of a two-way split).
  if (best->source >= 0.9 && best->source_weight >= 0.6)
    say(fmt::format("Layer {}, head {} is the copying head: it attends to the source position {:.1f}% of "
                    "the time, with a mean weight of {:.2f} there. In the heatmap below it draws the "
                    "anti-diagonal that reversal needs.",
                    best->layer, best->head, 100 * best->source, best->source_weight));
  else if (best->source >= 0.9)
    say(fmt::format("Layer {}, head {} puts its largest weight on the source position {:.1f}% of the time, but "
                    "only {:.2f} of its weight on average: it barely prefers the source, which is not copying "
                    "yet, and the heatmap below has no sharp anti-diagonal. More epochs (--epochs) let the heads "
                    "learn it.",
                    best->layer, best->head, 100 * best->source, best->source_weight));
  else
    say(fmt::format("No head copies yet: the best, layer {}, head {}, attends to the source position only "
                    "{:.1f}% of the time, and the heatmap below has no clear anti-diagonal. More epochs "
                    "(--epochs) let the heads learn it.",
                    best->layer, best->head, 100 * best->source));
  const Matrix w = head_weights(model, best->layer, sample, best->head);
  const std::vector<std::string> labels = sample_labels(sample, test, T);
  print_labelled(fmt::format("layer {}, head {}, held-out sample {}", best->layer, best->head, sample), w,
                 labels, labels, {.precision = 2, .max_rows = 16, .max_cols = 16});
}

// Step "What each head learned", part 3: the pattern analyzer's numbers for
// every head on the sample, against a uniform causal head.
void print_reversal_analyzer_rows(const ReversalOptions& o, const TinyTransformer& model, int64_t T) {
  say(fmt::format("The pattern analyzer on the same sample, every head (the numbers and classes are "
                  "explained with task 2's table; 'uniform' is a head that learned nothing):"));
  fmt::print("  {:<18} {:<9}  {:>7} {:>6} {:>8} {:>8}  {:<15}  {:>8}  {}\n", "head", "", "entropy", "focus",
             "diagonal", "local 3", "class", "local 1", "class (window 1)");
  print_analyzer_row("uniform, causal", "", uniform_weights(T, true));
  for (int64_t l = 0; l < o.layers; ++l)
    for (int64_t h = 0; h < o.heads; ++h)
      print_analyzer_row(fmt::format("layer {}, head {}", l, h), "trained", head_weights(model, l, o.sample, h));
}

}  // namespace

// Step "What each head learned".
LearnedHeads step_what_each_head_learned(const ReversalOptions& o, const ReversalTask& task, TinyTransformer& model,
                                         const ReversalData& test) {
  LearnedHeads learned;
  std::vector<int64_t> ids, targets;
  learned.trained = evaluate(model, test, task, ids, targets);
  learned.heads = analyze_heads(model, o.test, task);
  print_head_scores(learned.heads, task.digits, o.test);
  fmt::print("  held-out token accuracy {:.2f}%\n", learned.trained.percent());
  show_copying_head(o.sample, learned.heads, model, test, task.input_len());
  print_reversal_analyzer_rows(o, model, task.input_len());
  learned.ablations = ablate_heads(model, test, task, learned.trained);
  return learned;
}

}  // namespace sa::ch7
