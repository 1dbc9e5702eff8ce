// Chapter 7, task 2: next-token prediction on a small sentence corpus with
// three models (one head or several, bidirectional or causal), what training
// did to each head, and the pattern analyzer over them.
#include "07-training/analysis.hpp"
#include "07-training/checkpoint.hpp"
#include "07-training/corpus.hpp"
#include "07-training/model.hpp"
#include "07-training/patterns.hpp"
#include "07-training/program.hpp"
#include "07-training/training.hpp"

#include "05-causal-mask/mask.hpp"
#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/plot.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sa::ch7 {

CorpusInput read_corpus_input(const Options& o) {
  CorpusInput in{load_corpus(o.corpus), {}};
  std::vector<std::string> words;
  for (int64_t i = 0; i < in.corpus.vocab.size(); ++i) words.push_back(in.corpus.vocab.word(i));
  in.text_ids = encode_text(o.text, words);
  const int64_t n = int64_t(in.text_ids.size());
  if (n < 2) throw UsageError(fmt::format("--text '{}' has {} token; give at least two", o.text, n));
  if (n > in.corpus.max_len() - 1)
    throw UsageError(fmt::format("--text has {} tokens, but the models are trained on inputs of at most {}", n,
                                 in.corpus.max_len() - 1));
  if (int64_t(in.corpus.sentences.size()) < 16)
    throw UsageError(fmt::format("corpus '{}' has {} sentences; task 2 needs at least 16 (every 8th is held out)",
                                 o.corpus, in.corpus.sentences.size()));
  return in;
}

namespace {

std::string percent_change(double before, double after) {
  if (before == 0) return "   n/a";
  return fmt::format("{:+6.1f}%", 100.0 * (after - before) / before);
}

// ===========================================================================
// Task 2: next-token prediction on a small sentence corpus, and
// the pattern analyzer over every head.
// ===========================================================================

// One of the three models of task 2, with what the tables and figures need.
struct CorpusModel {
  std::string name;   // in the tables: "single-head, bidirectional"
  std::string tag;    // in figure labels and file names: "single", "bi", "causal"
  ModelConfig cfg;
  std::unique_ptr<Generator> gen;  // draws the model, then every epoch's batches
  // The dropout masks, from a generator of their own (seed + 1): a model
  // trained with dropout then sees the same batches as one trained without.
  std::unique_ptr<Generator> masks;
  std::unique_ptr<TinyTransformer> model;
  std::vector<Matrix> untrained, trained;  // each head's weights on --text, before and after
  std::vector<double> epoch_loss, epoch_held;
  Score train_score, held_score, prefix_score;
};

// Trains one of task 2's models for --corpus-epochs epochs with attention
// dropout p (chapter 6), then scores it with dropout off. With
// `print_epochs`, one line every 5 epochs.
void train_corpus_model(CorpusModel& m, const Corpus& corpus, const CorpusSplit& split, const Options& o, double p,
                        bool print_epochs) {
  AdamConfig adam_cfg;
  adam_cfg.lr = o.corpus_lr;
  Generator& gen = *m.gen;
  Adam adam(m.model->params, m.model->grads, adam_cfg);
  std::vector<int64_t> ids, targets;
  const auto start = Clock::now();
  for (int64_t epoch = 1; epoch <= o.corpus_epochs; ++epoch) {
    const auto batches = corpus_batches(gen, corpus, split.train, o.corpus_batch);
    double loss_sum = 0;
    for (const auto& b : batches) {
      make_next_token_batch(corpus, b, ids, targets);
      const StepStats s = train_step(*m.model, adam, ids, targets, int64_t(b.size()), {.p = p, .gen = m.masks.get()});
      if (!std::isfinite(s.loss))
        throw std::runtime_error(fmt::format("the loss became {} at epoch {}: training diverged", s.loss, epoch));
      loss_sum += s.loss;
    }
    const Score held = evaluate_next_token(*m.model, corpus, split.held_out);
    m.epoch_loss.push_back(loss_sum / double(batches.size()));
    m.epoch_held.push_back(held.percent());
    if (print_epochs && (epoch == 1 || epoch % 5 == 0 || epoch == o.corpus_epochs))
      fmt::print("    epoch {:3}/{}  loss {:.4f}  held-out {:6.2f}%  {:5.2f} s\n", epoch, o.corpus_epochs,
                 m.epoch_loss.back(), held.percent(), seconds_since(start));
  }
  m.train_score = evaluate_next_token(*m.model, corpus, split.train);
  m.held_score = evaluate_next_token(*m.model, corpus, split.held_out);
  m.prefix_score = evaluate_prefixes(*m.model, corpus, split.held_out);
}

// The three models' short names, in figure labels and checkpoint names.
constexpr const char* kCorpusTags[3] = {"single", "bi", "causal"};

// The checkpoint of one of them.
std::string corpus_checkpoint_path(const Options& o, const std::string& tag) {
  return fmt::format("{}/corpus-{}.safetensors", o.checkpoint_dir, tag);
}

// The configurations of task 2's three models: one head, H heads
// bidirectional, H heads causal; one layer each.
std::vector<ModelConfig> corpus_model_configs(const Options& o, const Corpus& corpus) {
  std::vector<ModelConfig> configs(3);
  for (size_t k = 0; k < 3; ++k) {
    ModelConfig& c = configs[k];
    c.vocab = corpus.vocab.size();
    c.max_seq = corpus.max_len();
    c.d_model = o.corpus_d_model;
    c.n_heads = k == 0 ? 1 : o.corpus_heads;
    c.n_layers = 1;
    c.d_ff = 4 * o.corpus_d_model;
    c.causal = k == 2;
  }
  return configs;
}

// The three models of task 2, untrained: one head or H, bidirectional or
// causal, each from its own generator with the same seed, so the two
// H-head models start from the same weights and see the same batches.
std::vector<CorpusModel> make_corpus_models(const Options& o, const Corpus& corpus, uint64_t seed) {
  std::vector<CorpusModel> models(3);
  const int64_t H = o.corpus_heads;
  models[0].name = "single-head, bidirectional";
  models[0].tag = kCorpusTags[0];
  models[1].name = fmt::format("{} heads, bidirectional", H);
  models[1].tag = kCorpusTags[1];
  models[2].name = fmt::format("{} heads, causal", H);
  models[2].tag = kCorpusTags[2];
  const std::vector<ModelConfig> configs = corpus_model_configs(o, corpus);
  for (size_t k = 0; k < 3; ++k) {
    models[k].cfg = configs[k];
    models[k].gen = std::make_unique<Generator>(seed);
    models[k].masks = std::make_unique<Generator>(seed + 1);
    models[k].model = std::make_unique<TinyTransformer>(models[k].cfg, *models[k].gen);
  }
  return models;
}

// What dropout did: the same three models trained again from the same
// weights with the other setting (p = 0 when training used dropout, the
// default p otherwise), side by side.
void compare_dropout(const std::vector<CorpusModel>& models, const Options& o, const Corpus& corpus,
                     const CorpusSplit& split, uint64_t seed) {
  const double p = o.corpus_dropout(), other_p = p > 0 ? 0.0 : kCorpusDropout;
  std::vector<CorpusModel> others = make_corpus_models(o, corpus, seed);
  for (CorpusModel& m : others) train_corpus_model(m, corpus, split, o, other_p, false);
  const CorpusModel* with = p > 0 ? models.data() : others.data();
  const CorpusModel* without = p > 0 ? others.data() : models.data();
  const double p_with = std::max(p, other_p);
  gap();
  say(fmt::format("What dropout did: the same three models trained again from the same weights on the same "
                  "batches, {}.",
                  p > 0 ? "without dropout (p = 0)" : fmt::format("with dropout p = {}", other_p)));
  fmt::print("  {:<26} {:>9} {:>19} {:>19} {:>12}\n", "model", "dropout", "train loss / acc", "held-out loss / acc",
             "gap (loss)");
  // A difference counts when it is above 0.005: below that, two runs of the
  // same model on CPUs of other vector widths can disagree (their rounding
  // drifts apart over the epochs), and so would the sentence.
  constexpr double kMargin = 0.005;
  int64_t smaller_gap = 0, better_held = 0;  // out of 3
  for (size_t k = 0; k < 3; ++k)
    for (const CorpusModel* m : {&with[k], &without[k]}) {
      const bool dropped = m == &with[k];
      fmt::print("  {:<26} {:>9} {:>9.4f} {:>8.2f}% {:>9.4f} {:>8.2f}% {:>12.4f}\n", dropped ? m->name : "",
                 dropped ? fmt::format("p = {}", p_with) : "p = 0", m->train_score.loss, m->train_score.percent(),
                 m->held_score.loss, m->held_score.percent(), m->held_score.loss - m->train_score.loss);
      if (!dropped) {
        smaller_gap +=
            with[k].held_score.loss - with[k].train_score.loss < m->held_score.loss - m->train_score.loss - kMargin;
        better_held += with[k].held_score.loss < m->held_score.loss - kMargin;
      }
    }
  // "none of the 3 models", "1 of the 3 models", "all 3 models"; then "... of them".
  const auto how_many = [](int64_t k, bool first) {
    if (k == 0) return std::string(first ? "none of the 3 models" : "none of them");
    if (k == 3) return std::string(first ? "all 3 models" : "all of them");
    return fmt::format("{} of {}", k, first ? "the 3 models" : "them");
  };
  say(fmt::format("The gap is held-out loss minus train loss: what a model knows only about the sentences it "
                  "trained on. In this run dropout narrowed the gap by more than 0.005 for {} and lowered the held-out loss "
                  "by more than that for {}. "
                  "Every training step with dropout sees the model with some attention weights missing, so no "
                  "head can rely on a single key; the price is a noisier descent. Both rows of a model are "
                  "measured with dropout off, as a model is used after training. On a corpus this small one run "
                  "decides little: try other --seed values.",
                  how_many(smaller_gap, true), how_many(better_held, false)));
}

// Each head's (seq, seq) weights on one sentence.
std::vector<Matrix> weights_on(TinyTransformer& model, const std::vector<int64_t>& ids) {
  model.forward(ids, 1);
  std::vector<Matrix> heads;
  for (int64_t h = 0; h < model.config().n_heads; ++h) heads.push_back(head_weights(model, 0, 0, h));
  return heads;
}

double mean_entropy(const Matrix& P) { return attention_pattern(P).entropy; }

// The tallest block of a head's surface: its largest weight, leaving out,
// when `causal`, the first query's 1, which the mask forces.
double tallest_bar(const Matrix& P, bool causal) {
  const std::vector<Link> top = strongest_links(P, 1, causal);
  return top.empty() ? 0.0 : double(top[0].weight);
}

void draw_corpus_figures(Figures& figures, const Options& o, const Corpus& corpus, const CorpusSplit& split,
                         const std::vector<std::string>& labels, const std::string& quoted, int64_t n,
                         const std::vector<CorpusModel>& models) {
  const auto panel = [&](const Matrix& P, const std::string& title) {
    plot::Heatmap p = plot::weights_heatmap(title, P, labels);
    p.xlabel = "key (attended to)";
    return p;
  };
  const auto stats_title = [&](const Matrix& P, const std::string& who) {
    const PatternStats st = attention_pattern(P);
    return fmt::format("{}: entropy {:.2f}, focus {:.2f}", who, st.entropy, st.focus);
  };
  const CorpusModel &single = models[0], &bi = models[1], &causal = models[2];
  const int H = int(o.corpus_heads);
  figures.draw("corpus_single_head.png", [&](const std::string& path) {
    return plot::heatmap_grid(path, fmt::format("Single head, bidirectional, on {}: before and after {} epochs", quoted,
                                                o.corpus_epochs),
                              1, 2,
                              {panel(single.untrained[0], stats_title(single.untrained[0], "untrained")),
                               panel(single.trained[0], stats_title(single.trained[0], "trained"))},
                              460);
  });
  // One model's heads before (top row) and after training (bottom row):
  // the causal model here, the bidirectional one just below.
  const auto untrained_vs_trained = [&](const std::string& file, const CorpusModel& m) {
    figures.draw(file, [&](const std::string& path) {
      std::vector<plot::Heatmap> panels;
      for (int h = 0; h < H; ++h) panels.push_back(panel(m.untrained[size_t(h)], stats_title(m.untrained[size_t(h)], fmt::format("head {} untrained", h))));
      for (int h = 0; h < H; ++h) panels.push_back(panel(m.trained[size_t(h)], stats_title(m.trained[size_t(h)], fmt::format("head {} trained", h))));
      return plot::heatmap_grid(path, fmt::format("{} heads, {}, on {}: before (top) and after {} epochs (bottom)", H,
                                                  m.cfg.causal ? "causal" : "bidirectional", quoted, o.corpus_epochs),
                                2, H, panels, 340);
    });
  };
  untrained_vs_trained("corpus_untrained_vs_trained.png", causal);
  untrained_vs_trained("corpus_bidirectional_untrained_vs_trained.png", bi);
  figures.draw("corpus_bidirectional_vs_causal.png", [&](const std::string& path) {
    std::vector<plot::Heatmap> panels;
    for (int h = 0; h < H; ++h) panels.push_back(panel(bi.trained[size_t(h)], stats_title(bi.trained[size_t(h)], fmt::format("bidirectional head {}", h))));
    for (int h = 0; h < H; ++h) panels.push_back(panel(causal.trained[size_t(h)], stats_title(causal.trained[size_t(h)], fmt::format("causal head {}", h))));
    return plot::heatmap_grid(path, fmt::format("Trained {} epochs from the same weights: bidirectional (top) reads the "
                                                "next word, causal (bottom) cannot",
                                                o.corpus_epochs),
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
          c.categories.push_back(fmt::format("{} {}", m.tag, h + 1));
          before.values.push_back(std::round(100 * metric(m.untrained[h])) / 100);
          after.values.push_back(std::round(100 * metric(m.trained[h])) / 100);
        }
      c.groups = {before, after};
      c.hlines = {{uniform_bi, "uniform, bidirectional"}, {uniform_causal, "uniform, causal"}};
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
      plot::Surface sf;
      sf.title = fmt::format("Causal head {} after training, on {}: one peak per query", best, quoted);
      sf.z = causal.trained[best];
      sf.row_labels = labels;
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

// ===========================================================================
// Task 2's steps, in the order run_corpus calls them.
// ===========================================================================

void print_corpus_title(const Options& o, const Corpus& corpus, uint64_t seed) {
  gap();
  fmt::print("Task 2: next-token prediction on {} ({} sentences), d_model {}, 1 layer, batch {}, Adam lr {}, "
             "attention dropout {}, {} epochs, seed {}\n",
             shown_path(o.corpus), corpus.sentences.size(), o.corpus_d_model, o.corpus_batch, o.corpus_lr,
             o.corpus_dropout(), o.corpus_epochs, seed);
}

// Step "The corpus: predict every next word".
void step_the_corpus(const Options& o, const Corpus& corpus, const CorpusSplit& split) {
  std::map<size_t, int64_t> lengths;
  for (const auto& s : corpus.sentences) ++lengths[s.size()];
  std::string length_list;
  for (const auto& [len, count] : lengths) length_list += fmt::format("{}{} x {}", length_list.empty() ? "" : ", ", count, len);
  fmt::print("  {} sentences of {} to {} tokens with the end token '.' (count x tokens: {})\n",
             corpus.sentences.size(), lengths.begin()->first, lengths.rbegin()->first, length_list);
  std::vector<std::string> words;
  for (int64_t i = 0; i < corpus.vocab.size(); ++i) words.push_back(corpus.vocab.word(i));
  fmt::print("  vocabulary ({} words, ids by first appearance): {}\n", corpus.vocab.size(), fmt::join(words, " "));
  fmt::print("  training {} sentences, held-out {} (every 8th: {}, ...)\n", split.train.size(),
             split.held_out.size(), [&] {
               std::vector<std::string> w;
               for (int64_t id : corpus.sentences[size_t(split.held_out[0])]) w.push_back(corpus.vocab.word(id));
               return fmt::format("\"{}\"", fmt::join(w, " "));
             }());
  const auto& first = corpus.sentences[0];
  std::vector<std::string> in, out;
  for (size_t p = 0; p + 1 < first.size(); ++p) {
    in.push_back(fmt::format("{:>5}", corpus.vocab.word(first[p])));
    out.push_back(fmt::format("{:>5}", corpus.vocab.word(first[p + 1])));
  }
  fmt::print("  input   {}\n  target  {}\n", fmt::join(in, " "), fmt::join(out, " "));
  const int64_t T0 = int64_t(first.size()) - 1;
  print_shape(fmt::format("a batch of {} such sentences, inputs", o.corpus_batch), {o.corpus_batch, T0},
              "(batch, seq): all of one length");
  print_shape("its targets", {o.corpus_batch, T0});
  say("Every position predicts the word after it, and every prediction counts. A batch holds sentences of one "
      "length, so no padding is needed. Some of the next words can be known (after 'sat' comes 'on'), some "
      "cannot (after 'the' comes one of six animals or an adjective, anyone's guess): no model reaches 100% "
      "here, unless it cheats.");
}

// Step "Three models: one head or four (--corpus-heads), bidirectional or causal". Returns
// them untrained, with each head's weights on --text.
std::vector<CorpusModel> step_three_models(const Options& o, const Corpus& corpus, uint64_t seed,
                                           const std::vector<int64_t>& text_ids,
                                           const std::vector<std::string>& labels) {
  std::vector<CorpusModel> models = make_corpus_models(o, corpus, seed);
  const int64_t n = int64_t(text_ids.size());
  const int64_t H = o.corpus_heads;
  for (const CorpusModel& m : models) {
    const ModelConfig& c = m.cfg;
    fmt::print("  {:<26} d_k {:>2}  mask {:<15}  {} parameters\n", m.name, c.d_k(),
               c.causal ? "causal" : "none (all keys)", parameter_count(m.model->params));
  }
  say(fmt::format("Three setups, on the model of task 1 with one block: token and position "
                  "embeddings, one pre-norm block (attention, then the feed-forward), the head. The two "
                  "{}-head models start from identical weights and see identical batches; only the mask "
                  "differs. For a sentence of {} tokens the masks are:",
                  H, n));
  Matrix full = Matrix::Ones(n, n), lower = Matrix::Zero(n, n);
  const Mask cm = causal_mask(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) lower(i, j) = cm(i, j) ? 1.0f : 0.0f;
  print_labelled("bidirectional: every query sees every key", full, labels, labels, {.precision = 0});
  print_labelled("causal: query i sees keys 0..i (chapter 5)", lower, labels, labels, {.precision = 0});
  say("With a next-token loss, the bidirectional mask hands position i the very word it must predict: it sits "
      "at key i + 1. Such models are easily trained this way by mistake; this program does it on purpose, and then "
      "checks what they learned.");
  for (CorpusModel& m : models) m.untrained = weights_on(*m.model, text_ids);
  return models;
}

// Step "Training the three models", then what dropout did to them.
void step_training_the_models(const Options& o, const Corpus& corpus, const CorpusSplit& split,
                              const std::vector<int64_t>& text_ids, uint64_t seed, std::vector<CorpusModel>& models) {
  say(fmt::format("{} epochs each over the {} training sentences, batches of at most {} sentences of one length, "
                  "Adam lr {}, {}. Loss: mean over the epoch's steps{}; held-out accuracy: every next word of the {} "
                  "held-out sentences, the whole sentence in the input (as in training), dropout off.",
                  o.corpus_epochs, split.train.size(), o.corpus_batch, o.corpus_lr,
                  o.corpus_dropout() > 0
                      ? fmt::format("attention dropout p = {} in every training step (chapter 6's)", o.corpus_dropout())
                      : "no attention dropout (--dropout 0)",
                  o.corpus_dropout() > 0 ? ", as training sees it (with dropout)" : "", split.held_out.size()));
  for (CorpusModel& m : models) {
    fmt::print("  {}\n", m.name);
    train_corpus_model(m, corpus, split, o, o.corpus_dropout(), true);
    m.trained = weights_on(*m.model, text_ids);
  }
  compare_dropout(models, o, corpus, split, seed);
}

// Step "Bidirectional next-word prediction cheats", part 1: each model's
// scores with the whole sentence in view and with the prefix only, against
// lookup tables of the training sentences.
void print_cheat_table(const std::vector<CorpusModel>& models, const Corpus& corpus, const CorpusSplit& split) {
  fmt::print("  {:<26} {:>7}   {:>24}   {:>24}\n", "", "train", "held-out, whole sentence", "held-out, prefix only");
  fmt::print("  {:<26} {:>7}   {:>10} {:>13}   {:>10} {:>13}\n", "model", "loss", "loss", "accuracy", "loss",
             "accuracy");
  for (const CorpusModel& m : models)
    fmt::print("  {:<26} {:>7.4f}   {:>10.4f} {:>12.2f}%   {:>10.4f} {:>12.2f}%\n", m.name, m.train_score.loss,
               m.held_score.loss, m.held_score.percent(), m.prefix_score.loss, m.prefix_score.percent());
  fmt::print("  for scale, a lookup table of the training sentences (the most frequent next word after the same "
             "last k words):\n  k = 1: {:.2f}%   k = 2: {:.2f}%   k = 3: {:.2f}%   the whole prefix: {:.2f}%\n",
             ngram_accuracy(corpus, split.train, split.held_out, 1), ngram_accuracy(corpus, split.train, split.held_out, 2),
             ngram_accuracy(corpus, split.train, split.held_out, 3),
             ngram_accuracy(corpus, split.train, split.held_out, corpus.max_len()));
  say("'whole sentence': the model reads the sentence and predicts every next word at once, as in training. "
      "'prefix only': the word at position t + 1 is predicted from words 0..t alone, as a model that writes "
      "text must. For the causal model the two are the same numbers by construction.");
}

// Step "Bidirectional next-word prediction cheats", part 2: whether the
// bidirectional models beat every honest predictor, and whether they fall
// without the next word.
void say_whether_bidirectional_cheats(const std::vector<CorpusModel>& models, const Corpus& corpus,
                                      const CorpusSplit& split) {
  // The claims of this paragraph, from this run's numbers (another
  // corpus, seed or epoch count can overturn any of them).
  const CorpusModel &single = models[0], &bi = models[1], &causal = models[2];
  double honest = causal.held_score.percent();
  for (const int64_t k : {int64_t(1), int64_t(2), int64_t(3), corpus.max_len()})
    honest = std::max(honest, ngram_accuracy(corpus, split.train, split.held_out, k));
  const bool cheat_wins = std::min(single.held_score.percent(), bi.held_score.percent()) > honest;
  const bool prefix_falls = single.prefix_score.percent() < single.held_score.percent() &&
                            bi.prefix_score.percent() < bi.held_score.percent();
  const bool prefix_worse_loss = std::min(single.prefix_score.loss, bi.prefix_score.loss) > causal.held_score.loss;
  std::string text =
      cheat_wins
          ? fmt::format("With the sentence in view both bidirectional models score above every honest predictor "
                        "here ({:.2f}% and {:.2f}%, against at most {:.2f}% for the lookup tables and the causal "
                        "model): the word to predict is in their input, at key t + 1, and their heads learned to "
                        "look there.",
                        single.held_score.percent(), bi.held_score.percent(), honest)
          : fmt::format("With the sentence in view the bidirectional models score {:.2f}% and {:.2f}%, not both "
                        "above the best honest predictor here ({:.2f}%): in this run the word at key t + 1, "
                        "which is in their input, did not carry them past it.",
                        single.held_score.percent(), bi.held_score.percent(), honest);
  if (prefix_falls)
    text += fmt::format(" Without it (prefix only) their accuracy falls to {:.2f}% and {:.2f}%, what the current "
                        "word and the earlier ones say without the answer{}",
                        single.prefix_score.percent(), bi.prefix_score.percent(),
                        prefix_worse_loss
                            ? fmt::format(", and their loss ({:.4f}, {:.4f}) is worse than the causal model's "
                                          "{:.4f}: they are confidently wrong where they used to read the answer.",
                                          single.prefix_score.loss, bi.prefix_score.loss, causal.held_score.loss)
                            : ".");
  else
    text += " Without it (prefix only) their accuracy does not fall: they did not rely on the next word.";
  say(text + " The mean weight their queries put on the next token, the answer (uniform attention would give "
             "1/n):");
}

// Step "Bidirectional next-word prediction cheats", part 3: the weight the
// bidirectional heads put on the next token, the answer.
void print_next_token_weights(const std::vector<CorpusModel>& models) {
  for (const CorpusModel& m : models) {
    if (m.cfg.causal) continue;
    for (size_t h = 0; h < m.trained.size(); ++h)
      fmt::print("  {:<26} head {}  untrained {:.3f}  trained {:.3f}\n", h == 0 ? m.name : "", h,
                 next_token_weight(m.untrained[h]), next_token_weight(m.trained[h]));
  }
  fmt::print("  {:<26} every head 0: the mask gives the next token weight exactly 0\n", models[2].name);
}

// Step "Bidirectional next-word prediction cheats".
void step_bidirectional_cheats(const std::vector<CorpusModel>& models, const Corpus& corpus,
                               const CorpusSplit& split) {
  print_cheat_table(models, corpus, split);
  say_whether_bidirectional_cheats(models, corpus, split);
  print_next_token_weights(models);
  say("What a bidirectional model can learn honestly is a task whose answer is not in its input: fill in a "
      "hidden word from both sides (BERT's masked words), classify a whole sentence. Predicting the next word "
      "needs the causal mask, which is why the entropy and focus tables below are worth reading for the causal "
      "model, and a warning for the other two.");
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
  say(fmt::format("Trained, the heads' entropy is {:.0f}% to {:.0f}% below a uniform head's on this sentence. "
                  "{} of the {} strongest bidirectional links point one token ahead, at the word to predict; "
                  "the causal links can only look back, at the words that decide what comes next.",
                  100 * least, 100 * most, ahead, links));
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
      f.taller += top > top_before;
      f.sharper += attention_pattern(m->trained[h]).focus > attention_pattern(m->untrained[h]).focus;
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
  std::string text =
      f.taller == f.heads ? fmt::format("Trained, every head's tallest bar ({}) stands above {}. ", trained_range,
                                        before)
      : f.taller == 0     ? fmt::format("Trained, the heads' tallest bars run from {:.2f} to {:.2f}, and none "
                                        "stands above {}. ",
                                        f.trained_low, f.trained_high, before)
                          : fmt::format("Trained, the heads' tallest bars run from {:.2f} to {:.2f}, and {} of "
                                        "the {} {} above {}. ",
                                        f.trained_low, f.trained_high, f.taller, f.heads,
                                        f.taller == 1 ? "stands" : "stand", before);
  text += f.sharper == f.heads ? fmt::format("The focus of all {} heads rose.", f.heads)
          : f.sharper == 0     ? fmt::format("The focus of none of the {} heads rose.", f.heads)
                               : fmt::format("The focus of {} of the {} heads rose.", f.sharper, f.heads);
  return text;
}

void say_what_the_figures_show(const Options& o, const std::vector<CorpusModel>& models, int64_t n) {
  const FigureHeights f = measure_figure_heights(models, n);
  const int64_t H = o.corpus_heads;
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

// Step "What training did to each head", on --text.
void step_what_training_did(const Options& o, const std::vector<CorpusModel>& models,
                            const std::vector<std::string>& labels, int64_t n) {
  print_entropy_focus_table(models, n);
  print_strongest_links(models, labels);
  say_how_far_from_uniform(models, n);
  say_what_the_figures_show(o, models, n);
}

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
  std::string text =
      uniform_local
          ? fmt::format("With a window of 3, {} of the {} head rows are 'locally focused', and so is the uniform "
                        "head that learned nothing: on a sentence of {} tokens the band |j - i| <= 3 holds most "
                        "of the keys of every query, so local focus is near 1 whatever a head does, and that "
                        "class says little here. A window of 1 separates the heads better.",
                        local, rows, n)
          : fmt::format("With a window of 3, {} of the {} head rows are 'locally focused'; the uniform head is "
                        "not, so on {} tokens the class does tell heads apart.",
                        local, rows, n);
  if (n <= 7)
    text += " No head can be 'distributed' here: an entropy above 2 needs more than e^2 = 7.4 keys.";
  text += " The thresholds are absolute; read the numbers against the uniform rows.";
  say(text);
}

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

// Step "Save the three models".
void step_save_the_models(const Options& o, const Corpus& corpus, uint64_t seed, std::vector<CorpusModel>& models,
                          const std::vector<int64_t>& text_ids, const std::vector<std::string>& labels) {
  for (CorpusModel& m : models) {
    Checkpoint ckpt;
    ckpt.config = m.cfg;
    for (int64_t i = 0; i < corpus.vocab.size(); ++i) ckpt.tokens.push_back(corpus.vocab.word(i));
    ckpt.note = fmt::format("task 2, next-word prediction on {}: {}, {} epochs from seed {}, held-out accuracy "
                            "{:.2f}% (whole sentence), {:.2f}% (prefix only)",
                            std::filesystem::path(o.corpus).filename().string(), m.name, o.corpus_epochs, seed,
                            m.held_score.percent(), m.prefix_score.percent());
    ckpt.params = m.model->params;
    save_and_verify(ckpt, corpus_checkpoint_path(o, m.tag), *m.model, text_ids, 1);
  }
  fmt::print("  look at one:  {} --checkpoint {} --text \"{}\" --layer 0 --head 1\n",
             shown_path(sibling_program("07-training-analyze")),
             shown_path(corpus_checkpoint_path(o, kCorpusTags[2])),
             fmt::join(labels, " "));
}

}  // namespace

void run_corpus(const Options& o, const CorpusInput& input, const Cli& cli, Figures& figures, Steps& next_step) {
  const Corpus& corpus = input.corpus;
  const std::vector<int64_t>& text_ids = input.text_ids;
  const int64_t n = int64_t(text_ids.size());
  const CorpusSplit split = split_corpus(corpus, 8);
  std::vector<std::string> labels;
  for (int64_t id : text_ids) labels.push_back(corpus.vocab.word(id));
  const std::string quoted = fmt::format("\"{}\"", fmt::join(labels, " "));
  print_corpus_title(o, corpus, cli.seed);

  next_step("The corpus: predict every next word");
  step_the_corpus(o, corpus, split);
  // "four" by default: --corpus-heads changes the count, and the title follows.
  constexpr std::array<const char*, 8> kWords{"two", "three", "four", "five", "six", "seven", "eight", "nine"};
  const std::string heads = o.corpus_heads <= 9 ? kWords[size_t(o.corpus_heads - 2)] : std::to_string(o.corpus_heads);
  next_step(fmt::format("Three models: one head or {}, bidirectional or causal", heads));
  std::vector<CorpusModel> models = step_three_models(o, corpus, cli.seed, text_ids, labels);
  next_step("Training the three models");
  step_training_the_models(o, corpus, split, text_ids, cli.seed, models);
  next_step("Bidirectional next-word prediction cheats");
  step_bidirectional_cheats(models, corpus, split);
  next_step(fmt::format("What training did to each head, on {}", quoted));
  step_what_training_did(o, models, labels, n);
  next_step("The pattern analyzer over every head");
  step_pattern_analyzer(models, n);
  next_step("Save the three models");
  step_save_the_models(o, corpus, cli.seed, models, text_ids, labels);

  gap();
  fmt::print("Drawing figures\n");
  draw_corpus_figures(figures, o, corpus, split, labels, quoted, n, models);
}

std::vector<CheckpointTarget> corpus_checkpoints(const Options& o, const CorpusInput& input) {
  const Corpus& corpus = input.corpus;
  uint64_t token_bytes = 0;
  for (int64_t id = 0; id < corpus.vocab.size(); ++id) token_bytes += corpus.vocab.word(id).size() + 1;
  std::vector<CheckpointTarget> targets;
  const std::vector<ModelConfig> configs = corpus_model_configs(o, corpus);
  for (size_t k = 0; k < configs.size(); ++k)
    targets.push_back({corpus_checkpoint_path(o, kCorpusTags[k]), checkpoint_size_bound(configs[k], token_bytes)});
  return targets;
}

}  // namespace sa::ch7
