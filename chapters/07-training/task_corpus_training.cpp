// Chapter 7, task 2, steps "Training the three models" (and what dropout
// did to them) and "Bidirectional next-word prediction cheats" (each
// model's scores with the whole sentence in view and with the prefix only).
#include "07-training/analysis.hpp"
#include "07-training/corpus.hpp"
#include "07-training/model.hpp"
#include "07-training/program.hpp"
#include "07-training/task_corpus.hpp"

#include "sa/print.hpp"
#include "sa/rng.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace sa::ch7 {

namespace {

// Trains one of task 2's models for --corpus-epochs epochs with attention
// dropout p (chapter 6), then scores it with dropout off. With
// `print_epochs`, one line every 5 epochs (every 5·k past 100 epochs, about 20 lines).
void train_corpus_model(CorpusModel& m, const Corpus& corpus, const CorpusSplit& split, const CorpusOptions& o,
                        double p, bool print_epochs) {
  AdamConfig adam_cfg;
  adam_cfg.lr = o.corpus_lr;
  Generator& gen = *m.gen;
  Adam adam(m.model->params, m.model->grads, adam_cfg);
  std::vector<int64_t> ids, targets;
  const auto start = Clock::now();
  // A line every 5 epochs up to 100 epochs; beyond, every 5·k so that the
  // table stays near 20 lines (--corpus-epochs 100000 would print 20,000).
  const int64_t every = 5 * std::max<int64_t>(1, (o.corpus_epochs + 99) / 100);
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
    if (print_epochs && (epoch == 1 || epoch % every == 0 || epoch == o.corpus_epochs))
      fmt::print("    epoch {:3}/{}  loss {:.4f}  held-out {:6.2f}%  {:5.2f} s\n", epoch, o.corpus_epochs,
                 m.epoch_loss.back(), held.percent(), seconds_since(start));
  }
  m.train_score = evaluate_next_token(*m.model, corpus, split.train);
  m.held_score = evaluate_next_token(*m.model, corpus, split.held_out);
  m.prefix_score = evaluate_prefixes(*m.model, corpus, split.held_out);
}

// What dropout did: the same three models trained again from the same
// weights with the other setting (p = 0 when training used dropout, the
// default p otherwise), side by side.
void compare_dropout(const std::vector<CorpusModel>& models, const CorpusOptions& o, const Corpus& corpus,
                     const CorpusSplit& split, uint64_t seed) {
  const double p = o.dropout, other_p = p > 0 ? 0.0 : kCorpusDropout;
  std::vector<CorpusModel> others = make_corpus_models(o.corpus_d_model, o.corpus_heads, corpus, seed);
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

}  // namespace

// Step "Training the three models", then what dropout did to them.
void step_training_the_models(const CorpusOptions& o, const Corpus& corpus, const CorpusSplit& split,
                              const std::vector<int64_t>& text_ids, uint64_t seed, std::vector<CorpusModel>& models) {
  say(fmt::format("{} each over the {} training sentences, batches of at most {} of one length, "
                  "Adam lr {}, {}. Loss: mean over the epoch's steps{}; held-out accuracy: every next word of the {} "
                  "held-out sentences, the whole sentence in the input (as in training), dropout off.",
                  count_of(o.corpus_epochs, "epoch"), split.train.size(), count_of(o.corpus_batch, "sentence"),
                  o.corpus_lr,
                  o.dropout > 0
                      ? fmt::format("attention dropout p = {} in every training step (chapter 6's)", o.dropout)
                      : "no attention dropout (--dropout 0)",
                  o.dropout > 0 ? ", as training sees it (with dropout)" : "", split.held_out.size()));
  for (CorpusModel& m : models) {
    fmt::print("  {}\n", m.name);
    train_corpus_model(m, corpus, split, o, o.dropout, true);
    m.trained = weights_on(*m.model, text_ids);
  }
  compare_dropout(models, o, corpus, split, seed);
}

namespace {

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
                        single.held_score.percent(), bi.held_score.percent(), bound_above(honest, 2))
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

}  // namespace

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

}  // namespace sa::ch7
